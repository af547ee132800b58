"""Adam, and lazy Adam on rows of embedding tables, for the encoders' training, written out so that training never
imports ``torch._dynamo``.

``torch.optim``'s optimizers wrap their methods so that ``torch.compile`` leaves them alone, and the wrapper imports
``torch._dynamo`` on first use: 2.6 to 5.6 CPU seconds in every process that trains (measured on the shared 2-core
machine), more than a small lake's whole training, and paid by each of the embed stage's two training tasks.  The
encoders compile nothing, so these classes do what ``torch.optim.Adam`` (its single-tensor CPU path, no weight decay,
no AMSGrad) and ``torch.optim.SparseAdam`` do, operation for operation: given the same gradients, the same tensors come
out bit for bit (``tests/test_training_stop.py`` checks both against ``torch.optim``).
"""
from __future__ import annotations

import math


class Adam:
    """``torch.optim.Adam(params, lr)`` with its default betas and eps (Kingma & Ba, Algorithm 1)."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        import torch

        self.params = list(params)
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.state = [(torch.tensor(0.0), torch.zeros_like(p), torch.zeros_like(p)) for p in self.params]

    def zero_grad(self) -> None:
        for p in self.params:
            p.grad = None

    def step(self) -> None:
        import torch

        with torch.no_grad():
            for p, (step_t, exp_avg, exp_avg_sq) in zip(self.params, self.state):
                if p.grad is None:
                    continue
                grad = p.grad
                step_t += 1
                exp_avg.lerp_(grad, 1 - self.beta1)
                exp_avg_sq.mul_(self.beta2).addcmul_(grad, grad, value=1 - self.beta2)
                step = step_t.item()
                step_size = self.lr / (1 - self.beta1 ** step)
                denom = (exp_avg_sq.sqrt() / (1 - self.beta2 ** step) ** 0.5).add_(self.eps)
                p.addcdiv_(exp_avg, denom, value=-step_size)


class RowAdam:
    """Adam on the rows of embedding tables that a step read, as ``torch.optim.SparseAdam`` does (lazy Adam: moments
    and weights change only in those rows), given those rows' dense gradients.

    A step reads a few thousand rows of tables of 2^18; training gathers them into a small tensor, so that autograd
    differentiates that tensor instead of building sparse gradients of the whole table (which ``SparseAdam`` must then
    coalesce): a join-encoder step took half the CPU time of torch's sparse path.  The update is ``SparseAdam``'s,
    operation for operation, on the coalesced gradient (``tests/test_training_stop.py``); the gradient itself sums a
    row's occurrences in another order than torch's sparse backward, so training equals it up to float rounding."""

    def __init__(self, tables, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        import torch

        self.tables = list(tables)
        self.lr, (self.beta1, self.beta2), self.eps = lr, betas, eps
        self.state = [(torch.zeros_like(t), torch.zeros_like(t)) for t in self.tables]
        self.steps = 0

    def step(self, rows, grads) -> None:
        """Update the ``rows`` (distinct indices) of every table with its gradient rows ``grads[i]``."""
        import torch

        self.steps += 1
        step_size = self.lr * math.sqrt(1 - self.beta2 ** self.steps) / (1 - self.beta1 ** self.steps)
        with torch.no_grad():
            for table, grad, (exp_avg, exp_avg_sq) in zip(self.tables, grads, self.state):
                old_avg = exp_avg.index_select(0, rows)
                avg_update = grad.sub(old_avg).mul_(1 - self.beta1)
                exp_avg.index_add_(0, rows, avg_update)
                old_sq = exp_avg_sq.index_select(0, rows)
                sq_update = grad.pow(2).sub_(old_sq).mul_(1 - self.beta2)
                exp_avg_sq.index_add_(0, rows, sq_update)
                numer = avg_update.add_(old_avg)
                sq_update.add_(old_sq)
                denom = sq_update.sqrt_().add_(self.eps)
                table.index_add_(0, rows, -step_size * numer.div_(denom))
