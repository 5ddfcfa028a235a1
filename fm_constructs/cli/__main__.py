"""``python -m fm_constructs.cli``: the same entry point as the ``fmc`` console script."""

from fm_constructs.cli.main import main

raise SystemExit(main())
