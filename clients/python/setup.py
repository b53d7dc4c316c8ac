"""Build hook of bustle-client: generate the wire modules with flatc.

``build_py`` runs ``flatc --python`` on the schemas (``BUSTLE_SCHEMA_DIR``,
default ``../../proto/fbs`` beside this file) into the build directory, so
the wheel carries ``bustle/wire`` generated from exactly the schemas of this
checkout. An editable install (``pip install -e``) generates them into
``build/wire-python`` here (ignored by git), where ``bustle_client._wire``
finds them. Metadata is in pyproject.toml.

An sdist (``make wheel``, make-dist.sh) carries the generated modules
in ``generated/``: built from it, ``build_py`` copies them and needs neither
flatc nor the schemas, so the sdist and the wheel install with no compiler.
"""

import os
import shutil
import subprocess
from pathlib import Path

from setuptools import setup
from setuptools.command.build_py import build_py as _build_py
from setuptools.command.sdist import sdist as _sdist

HERE = Path(__file__).resolve().parent
SCHEMAS = ("common.fbs", "client.fbs", "server.fbs")


def schema_dir() -> Path:
    d = Path(os.environ.get("BUSTLE_SCHEMA_DIR", HERE.parent.parent / "proto" / "fbs"))
    missing = [s for s in SCHEMAS if not (d / s).is_file()]
    if missing:
        raise SystemExit(f"bustle-client: no {', '.join(missing)} in {d}; build from a Bustle checkout "
                         "or set BUSTLE_SCHEMA_DIR to proto/fbs")
    return d


#: In an sdist only: the wire modules generated when the sdist was made.
PREGENERATED = HERE / "generated"


def generate(out: Path) -> None:
    if (PREGENERATED / "bustle" / "wire" / "Delta.py").is_file():
        shutil.rmtree(out / "bustle", ignore_errors=True)
        shutil.copytree(PREGENERATED / "bustle", out / "bustle")
        return
    flatc = os.environ.get("FLATC") or shutil.which("flatc")
    if not flatc:
        raise SystemExit("bustle-client: flatc not found (Debian: apt-get install flatbuffers-compiler, "
                         "or set FLATC)")
    d = schema_dir()
    shutil.rmtree(out / "bustle", ignore_errors=True)
    # --gen-object-api: the <Table>T classes bustle_client.codec builds commands with.
    subprocess.run([flatc, "--python", "--gen-object-api", "-o", str(out), "-I", str(d),
                    *(str(d / s) for s in SCHEMAS)], check=True)
    # The tables' fields: replies (bustle_client.messages.wire_dataclass) and
    # command bodies (bustle_client.codec).
    subprocess.run([flatc, "--jsonschema", "-o", str(out / "bustle" / "wire"), "-I", str(d),
                    str(d / "server.fbs"), str(d / "client.fbs")], check=True)
    if not (out / "bustle" / "wire" / "Delta.py").is_file():
        raise SystemExit(f"bustle-client: flatc wrote no bustle/wire/Delta.py into {out}")


#: Where an editable install (pip install -e) generates the wire modules;
#: bustle_client/_wire.py looks there when bustle.wire is not importable.
EDITABLE_WIRE = HERE / "build" / "wire-python"


class build_py(_build_py):
    def run(self):
        super().run()
        if getattr(self, "editable_mode", False):
            generate(EDITABLE_WIRE)
        else:
            generate(Path(self.build_lib))

    def get_outputs(self, include_bytecode=1):
        outputs = super().get_outputs(include_bytecode)
        wire = Path(self.build_lib) / "bustle"
        return outputs + [str(p) for p in wire.rglob("*") if p.suffix in (".py", ".json")] if wire.is_dir() else outputs


class sdist(_sdist):
    """The sdist carries the generated wire modules in generated/, so it
    builds without flatc or the schemas (see generate())."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        generate(Path(base_dir) / "generated")


setup(cmdclass={"build_py": build_py, "sdist": sdist})
