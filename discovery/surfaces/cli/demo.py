"""``lakescout demo-lake``: write the sample lake with its ground truth."""
from __future__ import annotations

import json

from .common import UsageError, add_common


def cmd_demo_lake(args) -> int:
    from ...orchestration.demo_lake import generate_demo_lake

    if args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    try:
        summary = generate_demo_lake(args.dir, seed=args.seed, lakehouse=True)
    except OSError as exc:
        raise UsageError(f"cannot write the sample lake to {args.dir!r}: {exc.strerror or exc}") from None
    print(json.dumps(summary, default=str) if args.json else f"sample lake written to {args.dir}: {summary}")
    return 0


def register(sub) -> None:
    d = sub.add_parser("demo-lake", help="write the sample lake (files and lakehouse tables) with its ground truth")
    d.add_argument("dir", help="folder to write the lake to (created; its ground truth goes to DIR/_ground_truth/)")
    d.add_argument("--seed", type=int, default=7, help="seed of the generated tables (default 7)")
    add_common(d, cmd_demo_lake, config=False)
