import pytest

from hear2act_cli import main


def test_demo_prints_transcript_with_state_tags(capsys):
    assert main(["demo", "--seed", "3"]) == 0
    out = capsys.readouterr().out
    assert "User: " in out and "Assistant: I'd suggest option" in out
    assert "[reluctant/" in out and "success:" in out


def test_demo_unknown_agent_is_a_clear_error(capsys):
    assert main(["demo", "--agent", "nobody"]) == 2
    assert "known agents" in capsys.readouterr().err


def test_unknown_env_is_rejected():
    with pytest.raises(SystemExit):
        main(["demo", "--env", "CartPole-v1"])
