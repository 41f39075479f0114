"""A plain Python program: writes a results file in blocks, reads its header back."""
import json
import os

with open("results.bin", "wb") as f:
    for i in range(64):
        f.write(os.urandom(65536))
with open("results.json", "w") as f:
    json.dump({"blocks": 64}, f)
with open("results.bin", "rb") as f:
    f.seek(-65536, 2)
    tail = f.read()
    f.seek(0)
    head = f.read(4096)
print(len(tail), len(head))
