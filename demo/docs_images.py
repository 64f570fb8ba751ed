"""The figures in the README and docs/tour.md, drawn by the current report renderer from the demo's ``browser``
campaign (12 values, 2,000 simulated users, epsilon 1), seeded so a rerun draws the same data.

    python -m demo.docs_images            # rewrites docs/img/report-browser.png and docs/img/report-sqrt-n.png

Each PNG carries, as text chunks, the title and legend its figure was drawn with; ``tests/demo/test_docs_images.py``
draws the figures again (no rendering) and compares, so a change of the renderer's legend or title that leaves the
images behind fails there.
"""

from __future__ import annotations

import io
import sys
from pathlib import Path

import numpy as np
from PIL import Image, PngImagePlugin

from client_sdk import load_spec
from estimators import estimate
from estimators.report import ReportData
from estimators.report.plots import Plot, report_plots
from estimators.simulate import simulate

from .scenario import CAMPAIGNS

IMAGES = Path(__file__).resolve().parent.parent / "docs" / "img"
USERS = 2_000
SEED = 20250301
FILES = {"report-browser.png": 0, "report-sqrt-n.png": 1}  # the report's figures, by position


def docs_plots() -> dict[str, Plot]:
    "The docs' figures by file name, drawn from the seeded simulation (not yet rendered)"
    campaign = next(c for c in CAMPAIGNS if c.name == "browser")
    spec = load_spec(campaign.spec)
    rng = np.random.default_rng(SEED)
    shares = campaign.shares or {}
    domain = list(spec.domain or ())
    users = rng.choice(len(domain), size=USERS, p=[shares.get(str(value), 0.0) for value in domain])
    result = estimate(spec, simulate(spec, users, rng)).to_dict()
    data = ReportData(result, spec=spec.to_dict(), truth=dict(shares))
    plots = report_plots(data, rng=np.random.default_rng(SEED))
    return {name: plots[index] for name, index in FILES.items()}


def signature(plot: Plot) -> dict[str, str]:
    "What a PNG records of its figure: the title and legend of each axes"
    axes = plot.figure.axes
    legends = [axis.get_legend() for axis in axes]
    return {"Title": " | ".join(axis.get_title() for axis in axes),
            "Legend": " | ".join(text.get_text() for legend in legends if legend is not None
                                 for text in legend.get_texts())}


def png_text(path: Path) -> dict[str, str]:
    "The text chunks of a PNG"
    with Image.open(path) as image:
        return {key: str(value) for key, value in getattr(image, "text", {}).items()}


def write_images(directory: Path = IMAGES) -> list[Path]:
    "Draw each figure and write it with its signature"
    written = []
    for name, plot in docs_plots().items():
        info = PngImagePlugin.PngInfo()
        for key, value in {**signature(plot), "Software": "python -m demo.docs_images"}.items():
            info.add_text(key, value)
        with Image.open(io.BytesIO(plot.png)) as image:
            image.save(directory / name, pnginfo=info, optimize=True)
        written.append(directory / name)
    return written


if __name__ == "__main__":
    for path in write_images(Path(sys.argv[1]) if len(sys.argv) > 1 else IMAGES):
        print(path)
