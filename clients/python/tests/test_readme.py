"""The README's examples, run as they are written: MemoryHub live, the models scripted."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
from llm_servers import ScriptedModel, claude, gpt, text, tool_use

pytestmark = pytest.mark.django_db(transaction=True)

README = Path(__file__).resolve().parents[1] / "README.md"
SAVE = {"command": "create", "path": "/memories/diet.md", "file_text": "Vegetarian\n"}


def examples() -> list[str]:
    return re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)


def test_every_example_in_the_readme_runs(live_server: Any, acme: Any, monkeypatch: Any,
                                          capsys: Any) -> None:
    turns = [claude(tool_use("toolu_1", SAVE)), claude(text("Noted.")),  # the memory tool
             claude(text("Mushroom risotto.")),  # the middleware
             gpt("Lentil soup."),  # the middleware, OpenAI, streamed
             claude(tool_use("toolu_2", SAVE)), claude(text("DONE"))]  # the flush
    outputs = []
    with ScriptedModel(turns) as model:
        for name, value in {"MEMORYHUB_URL": live_server.url, "MEMORYHUB_API_KEY": acme.key,
                            "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "test",
                            "OPENAI_BASE_URL": f"{model.url}/v1",
                            "OPENAI_API_KEY": "test"}.items():
            monkeypatch.setenv(name, value)
        for number, example in enumerate(examples(), 1):
            exec(compile(example, f"README.md example {number}", "exec"), {"__name__": "example"})
            outputs.append(capsys.readouterr().out)
        assert model.turns == []
    rest, index, tool, middleware, streamed, flush = outputs
    assert "412 precondition_failed" in rest and "<memori_context>" in rest
    assert "<conversation_history>" in rest and "Lisbon" in rest
    assert "/notes/diet.md" in index
    assert tool == "Noted.\n" and middleware == "Mushroom risotto.\n"
    assert streamed == "Lentil soup."
    assert flush == "1 Alice moved to Lisbon.\n"
    # The middleware's call carried the recalled context, and was captured.
    assert "<memori_context>" in model.requests[2]["messages"][0]["content"]
