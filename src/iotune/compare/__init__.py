"""`iotune compare A B`: two profiles, or two studies, side by side (docs/compare.md).

read.py   what A and B are (a profile, a study's directory or summary.json), checked
diff.py   the comparison: per layer and per file (time, bytes, calls), settings that differ,
          for studies the headline figures; files matched by name, then by name pattern
text.py   the terminal's text and the JSON form
page.py   the HTML page (self-contained, every value escaped)
cli.py    the command (registered by iotune.cli)
"""
