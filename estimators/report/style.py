"""The inline style sheet of the HTML pages (a report, an index of reports): no external resources."""

STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; max-width: 60rem; margin: 2rem auto;
       padding: 0 1rem; color: #222; line-height: 1.45; }
h1 { font-size: 1.5rem; margin-bottom: 0.2rem; }
ul.facts { color: #444; padding-left: 1.2rem; }
table { border-collapse: collapse; margin: 1rem 0; font-variant-numeric: tabular-nums; }
th, td { padding: 0.25rem 0.7rem; border-bottom: 1px solid #ddd; text-align: right; }
th:first-child, td:first-child { text-align: left; }
tr.zero td { color: #888; }
figure { margin: 1.5rem 0; }
figure img { max-width: 100%; height: auto; border: 1px solid #eee; }
figcaption, .note { color: #555; font-size: 0.9rem; }
.warning { border-left: 4px solid #d62728; background: #fdf0f0; padding: 0.4rem 0.8rem; }
"""

# The figures' colours, one per trust model (and the ground truth)
LDP_COLOUR = "#1f77b4"
DISTRIBUTED_COLOUR = "#9467bd"
SHUFFLED_COLOUR = "#ff7f0e"
CENTRAL_COLOUR = "#d62728"
