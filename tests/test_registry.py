"""The one registry type (`codeworld.registry.Registry`) and the registries built on it."""

from __future__ import annotations

import sys

import pytest

from codeworld.registry import Registry


def test_an_unknown_name_names_close_matches_and_the_known_ones():
    planners = Registry("planner", {"mcts": 1, "cem": 2})
    with pytest.raises(KeyError, match=r"unknown planner 'mtcs' \(did you mean mcts\?\) \(known: mcts, cem\)"):
        planners.get("mtcs")
    with pytest.raises(KeyError, match=r"unknown planner 'zzz' \(known: mcts, cem\)"):
        planners["zzz"]


def test_each_registry_keeps_its_own_message_and_error():
    from codeworld.experiments import make_executor
    from codeworld.llm.backends import resolve
    from codeworld.planning import get_planner
    from codeworld.synthesis import get_method

    with pytest.raises(KeyError, match=r"unknown planner 'cme' \(did you mean cem\?\) \(known: mcts, cem"):
        get_planner("cme")
    with pytest.raises(KeyError, match=r"unknown synthesis method 'gif-mcst' \(did you mean gif-mcts\?\); known: "):
        get_method("gif-mcst")
    with pytest.raises(ValueError, match=r"unknown LLM backend 'locl' \(did you mean local\?\); known: hf, local, "
                                         r"openai, scripted, or MODULE:FACTORY"):
        resolve("locl")
    with pytest.raises(KeyError, match=r"unknown executor 'rya' \(did you mean ray\?\) \(known: local, ray\)"):
        make_executor("rya")


def test_a_lazy_entry_is_imported_when_first_asked_for(tmp_path, monkeypatch):
    (tmp_path / "lazy_registry_entry.py").write_text("class Thing:\n    value = 42\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.delitem(sys.modules, "lazy_registry_entry", raising=False)
    things = Registry("thing", {"plain": 1})
    things.register("lazy", "lazy_registry_entry:Thing.value")
    assert "lazy_registry_entry" not in sys.modules and things.names() == ["plain", "lazy"]
    assert things.get("lazy") == 42 and "lazy_registry_entry" in sys.modules
    things.register("broken", "lazy_registry_entry:Nope")
    with pytest.raises(ValueError, match="module 'lazy_registry_entry' has no thing 'Nope'"):
        things.get("broken")


def test_a_name_is_registered_once_unless_replaced_and_a_copy_is_apart():
    things = Registry("thing")
    things.register("a", 1)
    with pytest.raises(ValueError, match="thing 'a' is already registered"):
        things.register("a", 2)
    things.register("a", 3, replace=True)
    copy = things.copy()
    copy.register("b", 4)
    assert dict(things.items()) == {"a": 3} and dict(copy.items()) == {"a": 3, "b": 4}
    copy.unregister("a")
    assert "a" in things and "a" not in copy and list(copy) == ["b"] and len(copy) == 1
