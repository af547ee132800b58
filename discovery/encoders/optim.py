"""Adam and sparse (lazy) Adam for the encoders' training, written out so that training never imports ``torch._dynamo``.

``torch.optim``'s optimizers wrap their methods so that ``torch.compile`` leaves them alone, and the wrapper imports
``torch._dynamo`` on first use: 2.6 to 5.6 CPU seconds in every process that trains (measured on the shared 2-core
machine), more than a small lake's whole training, and paid by each of the embed stage's two training tasks.  The
encoders compile nothing, so these classes do what ``torch.optim.Adam`` (its single-tensor CPU path, no weight decay,
no AMSGrad) and ``torch.optim.SparseAdam`` do, operation for operation: the same tensors come out bit for bit
(``tests/test_encoders_trained.py`` checks both against ``torch.optim``).
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


class SparseAdam(Adam):
    """``torch.optim.SparseAdam(params, lr)``: Adam whose moments and parameters change only in the rows a sparse
    gradient holds (embedding tables of which a batch touches a few rows).  Where torch adds sparse tensors to the
    dense state (``sparse_mask``, sparse ``add_``), this gathers and adds the coalesced gradient's rows by index: the
    same float operations on the same rows (each row once), in a third less CPU time a step."""

    def __init__(self, params, lr: float, betas: tuple[float, float] = (0.9, 0.999), eps: float = 1e-8):
        super().__init__(params, lr, betas, eps)
        self.steps = [0] * len(self.params)

    def step(self) -> None:
        import torch

        with torch.no_grad():
            for i, (p, (_, exp_avg, exp_avg_sq)) in enumerate(zip(self.params, self.state)):
                if p.grad is None:
                    continue
                self.steps[i] += 1
                grad = p.grad.coalesce()  # the update is non-linear, so each row once
                rows, values = grad.indices()[0], grad.values()
                if values.numel() == 0:
                    continue
                old_avg = exp_avg.index_select(0, rows)
                avg_update = values.sub(old_avg).mul_(1 - self.beta1)
                exp_avg.index_add_(0, rows, avg_update)
                old_sq = exp_avg_sq.index_select(0, rows)
                sq_update = values.pow(2).sub_(old_sq).mul_(1 - self.beta2)
                exp_avg_sq.index_add_(0, rows, sq_update)
                numer = avg_update.add_(old_avg)
                sq_update.add_(old_sq)
                denom = sq_update.sqrt_().add_(self.eps)
                step = self.steps[i]
                step_size = self.lr * math.sqrt(1 - self.beta2 ** step) / (1 - self.beta1 ** step)
                p.index_add_(0, rows, -step_size * numer.div_(denom))
