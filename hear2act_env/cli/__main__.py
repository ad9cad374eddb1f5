"""``python -m hear2act_env.cli`` runs the ``hear2act`` command."""

import sys

from hear2act_env.cli import main

sys.exit(main())
