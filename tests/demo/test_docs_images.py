"""The README's and the tour's figures are the current renderer's (issue 31: report-browser.png showed an older
legend).  ``python -m demo.docs_images`` draws them and records each figure's title and legend in the PNG; here
the figures are drawn again, not rendered, and compared with what the files record."""

from demo.docs_images import FILES, IMAGES, docs_plots, png_text, signature


def test_the_docs_images_were_drawn_by_the_current_renderer():
    plots = docs_plots()
    assert set(plots) == set(FILES)
    for name, plot in plots.items():
        recorded = png_text(IMAGES / name)
        assert recorded.get("Software") == "python -m demo.docs_images", f"{name}: not drawn by the script"
        current = signature(plot)
        assert {key: recorded.get(key) for key in current} == current, f"{name} is stale: python -m demo.docs_images"
