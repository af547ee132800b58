"""Training that follows the data: the encoders stop when the loss on held-out values (tables) stops falling, a
stopped model equals the one trained for exactly that many steps, and the optimizers written out for training do
what torch's do, bit for bit."""
from __future__ import annotations

import random
from dataclasses import replace

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from discovery.transforms.encoders import HashEncoder, JoinEncoderConfig, TableEncoderConfig  # noqa: E402
from discovery.transforms.encoders.join_training import train_join_encoder  # noqa: E402
from discovery.transforms.encoders.optim import Adam, RowAdam  # noqa: E402
from discovery.transforms.encoders.table_encoder import held_out_tables, table_steps, train_table_encoder  # noqa: E402

WORDS = ("river", "stone", "north", "bridge", "valley", "harbor", "maple", "cedar", "lake", "grove", "summit",
         "field", "meadow", "crest", "haven", "point", "ridge", "spring", "wood", "bay")
SMALL = dict(dim=16, embed_dim=16, hidden=32, buckets=1 << 12, batch_size=64, steps=200)


def _values(seed: int, n: int) -> list[str]:
    rng = random.Random(seed)
    return sorted({" ".join(rng.sample(WORDS, rng.randint(1, 3))) + f" {rng.randint(1, 999)}" for _ in range(n)})


def _tables(seed: int, n: int) -> list[list[list[str]]]:
    rng = random.Random(seed)
    return [[[f"{rng.choice(WORDS)} {rng.randint(0, 20)}" for _ in range(30)] for _ in range(rng.randint(2, 4))]
            for _ in range(n)]


def test_join_training_stops_when_the_held_out_loss_is_flat_and_equals_that_many_steps():
    values = _values(0, 800)
    seen: list[tuple[int, float]] = []
    config = JoinEncoderConfig(**SMALL, holdout=0.25, holdout_min=32, check_every=5, patience=2,
                               min_improvement=0.5)  # a fall of half the loss per check: soon flat
    stopped = train_join_encoder(values, config, on_check=lambda step, loss, export: seen.append((step, loss)))
    steps = stopped.config.steps
    assert 0 < steps < config.steps and steps % config.check_every == 0
    assert [s for s, _ in seen] == list(range(0, steps + 1, config.check_every))
    assert seen[1][1] < seen[0][1]  # training lowers the loss on values it never saw
    never = train_join_encoder(values, replace(config, steps=steps, patience=10 ** 6))
    assert never.weights.keys() == stopped.weights.keys()
    assert all(np.array_equal(never.weights[k], stopped.weights[k]) for k in never.weights)


def test_a_lake_too_small_to_hold_values_out_trains_its_planned_steps():
    values = _values(1, 300)
    config = JoinEncoderConfig(**{**SMALL, "steps": 12}, holdout=0.05, holdout_min=128, check_every=1, patience=1,
                               min_improvement=0.99)
    checks = []
    enc = train_join_encoder(values, config, on_check=lambda *a: checks.append(a))
    assert enc.config.steps == 12 and checks == []


def test_the_exported_model_of_a_check_is_the_model_of_that_many_steps():
    values = _values(2, 600)
    config = JoinEncoderConfig(**{**SMALL, "steps": 10}, holdout=0.25, holdout_min=32, check_every=5,
                               patience=10 ** 6)
    exported = {}
    train_join_encoder(values, config, on_check=lambda step, loss, export: exported.setdefault(step, export()))
    assert sorted(exported) == [0, 5]
    assert exported[5].to_bytes() == train_join_encoder(values, replace(config, steps=5)).to_bytes()


def test_table_training_stops_on_held_out_tables_and_equals_that_many_steps():
    tables = _tables(3, 60)
    config = TableEncoderConfig(out_dim=16, hidden=32, batch_size=8, epochs=40, holdout=0.2, holdout_min=8,
                                patience=2, min_improvement=0.5)
    column = HashEncoder()
    assert held_out_tables(config, len(tables)) == 12
    stopped = train_table_encoder(tables, column, config)
    planned = table_steps(config, len(tables) - 12)
    assert 0 < stopped.config.max_steps < planned
    never = train_table_encoder(tables, column, replace(config, max_steps=stopped.config.max_steps, patience=10 ** 6))
    assert all(np.array_equal(never.weights[k], stopped.weights[k]) for k in never.weights)


def test_below_the_held_out_minimum_every_table_trains_every_epoch():
    tables = _tables(4, 20)
    config = TableEncoderConfig(out_dim=16, hidden=32, batch_size=8, epochs=3, patience=1, min_improvement=0.99)
    assert held_out_tables(config, len(tables)) == 0
    enc = train_table_encoder(tables, HashEncoder(), config)
    assert enc.config == config and table_steps(config, 20) == 9


@pytest.mark.parametrize("seed", [0, 1])
def test_adam_and_row_adam_are_torchs_adam_and_sparse_adam_bit_for_bit(seed):
    """Given the same gradients (a sparse embedding's, coalesced, for the rows a step read), the same weights."""
    def run(ours: bool):
        torch.manual_seed(seed)
        emb = torch.nn.EmbeddingBag(500, 8, mode="sum", sparse=True)
        gate = torch.nn.Embedding(500, 1, sparse=True)
        lin = torch.nn.Linear(8, 4)
        tables = [emb.weight, gate.weight]
        initial = emb.weight.detach().clone()
        sparse = RowAdam([t.detach() for t in tables], lr=1e-2) if ours else torch.optim.SparseAdam(tables, lr=1e-2)
        dense = (Adam if ours else torch.optim.Adam)(lin.parameters(), lr=1e-2)
        g = torch.Generator().manual_seed(seed)
        for _ in range(25):
            ids = torch.randint(0, 500, (48,), generator=g)  # repeated ids: a row's gradient summed
            loss = lin(emb(ids, torch.arange(0, 48, 6), per_sample_weights=gate(ids)[:, 0].exp())).pow(2).sum()
            for t in tables:
                t.grad = None
            dense.zero_grad()
            loss.backward()
            if ours:
                grads = [t.grad.coalesce() for t in tables]
                assert torch.equal(grads[0].indices(), grads[1].indices())
                sparse.step(grads[0].indices()[0], [grad.values() for grad in grads])
            else:
                sparse.step()
            dense.step()
        return [initial] + [t.detach().clone() for t in (emb.weight, gate.weight, lin.weight, lin.bias)]

    theirs, ours = run(False), run(True)
    assert all(torch.equal(a, b) for a, b in zip(theirs, ours))
    assert not torch.equal(theirs[0], theirs[1])  # the rows read were trained


def test_training_imports_no_dynamo(tmp_path):
    """``torch.optim`` imports ``torch._dynamo`` on first use (seconds of a training task); the encoders do not."""
    import subprocess
    import sys

    script = ("import sys\nfrom discovery.transforms.encoders import JoinEncoderConfig, train_join_encoder\n"
              f"train_join_encoder({_values(5, 200)!r}, JoinEncoderConfig(**{dict(SMALL, steps=3)!r}))\n"
              "print('torch._dynamo' in sys.modules, 'torch' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True).stdout.split()
    assert out == ["False", "True"]
