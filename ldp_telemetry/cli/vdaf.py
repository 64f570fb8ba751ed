"""``ldp-telemetry vdaf``: tools for the Prio3 layer of distributed campaigns (draft-irtf-cfrg-vdaf-20)."""

from __future__ import annotations

from pathlib import Path

import click

# Function-level imports: the command imports the test-vector checker when it runs: its `--help` does not load it
# (+240 ms).


@click.group()
def vdaf() -> None:
    "Prio3 verifiable distributed aggregation (draft-irtf-cfrg-vdaf-20)."


@vdaf.command("check-vectors")
@click.argument("directory", type=click.Path(exists=True, file_okay=False, path_type=Path))
def check_vectors(directory: Path) -> None:
    """Run every *.json test vector in DIRECTORY: one line per file, PASS name or FAIL name: first mismatch.

    Exits 1 if any file fails (or there is none).  Vectors of unsupported types fail; none is skipped.

    Example: ldp-telemetry vdaf check-vectors tests/data/vdaf-test-vectors  (in a checkout of the repository)
    """
    from client_sdk.vdaf.vectors import check_vector_file

    files = sorted(directory.glob("*.json"))
    if not files:
        click.echo(f"FAIL {directory}: no *.json test vectors")
        raise SystemExit(1)
    failed = 0
    for path in files:
        mismatch = check_vector_file(path)
        if mismatch is None:
            click.echo(f"PASS {path.stem}")
        else:
            failed += 1
            click.echo(f"FAIL {path.stem}: {mismatch}")
    if failed:
        raise SystemExit(1)
