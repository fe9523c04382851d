"""`pip install .` as a user runs it, checked: the package built by pip (scikit-build-core,
into build-pip/, where ccache serves `make build`'s objects) is installed into a virtual
environment, its `kora` command runs, and the package's pytest suite passes against the
installed copy (not the build tree's).

usage: python3 tests/python/pip_install.py BUILD_DIR
"""
import os
import subprocess
import sys
import tempfile

SOURCE = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", ".."))


def run(cmd, **kw):
    print("+", " ".join(cmd), flush=True)
    subprocess.run(cmd, check=True, **kw)


def main():
    build = os.path.abspath(sys.argv[1])
    venv = os.path.join(build, "pip-venv")
    python = os.path.join(venv, "bin", "python")
    if not os.path.exists(python):
        # The test tools (numpy, onnx, onnxruntime, pytest, scikit-build-core, nanobind) come
        # from the interpreter's own site-packages; only kora is installed into the venv.
        run([sys.executable, "-m", "venv", "--system-site-packages", venv])
    env = dict(os.environ)
    env.pop("PYTHONPATH", None)
    env.setdefault("CMAKE_BUILD_PARALLEL_LEVEL", str(os.cpu_count() or 2))
    run([python, "-m", "pip", "install", "-q", "--disable-pip-version-check",
         "--no-build-isolation", "--no-deps", "--force-reinstall", SOURCE], env=env)
    with tempfile.TemporaryDirectory() as cwd:  # away from the source tree's python/
        out = subprocess.run([python, "-c", "import kora; print(kora.__file__)"], cwd=cwd,
                             env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
        assert out.strip().startswith(venv), f"imported kora from {out.strip()}, not {venv}"
        help_text = subprocess.run([os.path.join(venv, "bin", "kora"), "operators"], cwd=cwd,
                                   env=env, check=True, stdout=subprocess.PIPE, text=True).stdout
        assert "Conv" in help_text.split()
        run([python, "-m", "pytest", "-q", "-p", "no:cacheprovider",
             os.path.join(SOURCE, "tests", "python")], cwd=cwd, env=env)
    print("pip install: the installed package passes its tests")


if __name__ == "__main__":
    main()
