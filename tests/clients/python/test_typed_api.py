"""The public Session API is annotated (the package ships py.typed): every
public method has a return annotation and one for every parameter."""

import inspect
from pathlib import Path

import bustle_client
from bustle_client import Session


def test_every_public_session_method_is_annotated():
    missing = []
    for name, fn in inspect.getmembers(Session, inspect.isfunction):
        if name.startswith("_") and name not in ("__init__", "__enter__", "__exit__"):
            continue
        sig = inspect.signature(fn)
        for pname, p in sig.parameters.items():
            if pname != "self" and p.kind is not p.VAR_KEYWORD and p.annotation is p.empty:
                missing.append(f"{name}({pname})")
        if sig.return_annotation is sig.empty:
            missing.append(f"{name} -> ?")
    assert not missing, missing


def test_package_is_marked_typed():
    assert (Path(bustle_client.__file__).parent / "py.typed").is_file()
