"""``python -m openrl_inspect.cli``: the same as the ``openrl-inspect`` command."""

from openrl_inspect.cli.main import main

raise SystemExit(main())
