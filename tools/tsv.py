"""The registry tables (src/iotune/data/*.tsv) as the generators read them: a header row, then
one row per entry; blank lines and lines starting with # are comments."""


def rows(path):
    with open(path, encoding="utf-8") as f:
        lines = [ln.rstrip("\n") for ln in f if ln.strip() and not ln.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, ln.split("\t"), strict=True)) for ln in lines[1:]]
