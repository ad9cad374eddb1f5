"""``python -m hear2act_env.cli`` runs the ``hear2act`` command."""

from hear2act_env.cli import console_main

console_main()
