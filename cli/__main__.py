"""``python -m hear2act_cli`` runs the ``hear2act`` command."""

from hear2act_cli import console_main

console_main()
