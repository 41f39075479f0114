"""`python -m iotune`: the same as the `iotune` command."""

from iotune.cli import main

raise SystemExit(main())
