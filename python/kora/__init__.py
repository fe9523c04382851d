"""kora: an ONNX model in, the provably cheapest set of kernels for this machine out.

    import kora
    artifact = kora.compile("model.onnx")            # profile, orchestrate, emit
    session = kora.InferenceSession(artifact)        # or a saved artifact's path
    outputs = session.run(None, {"input": x})        # numpy in, numpy out

``compile`` runs kora's whole pipeline (the same as ``kora compile``): it measures the
kernels of the plans the solver chooses that this machine has not measured yet into the
profile database (on demand), solves for the cheapest plan, checks it on the clock and writes an artifact directory. ``InferenceSession``
follows onnxruntime's: ``get_inputs()``, ``get_outputs()``, ``run(output_names, feeds)``.
Errors are ``kora.KoraError`` (a ``RuntimeError``) with kora's one-line message.
"""
import json
import os
import shutil
import tempfile
import weakref

import numpy as np

from . import _kora
from ._kora import KoraError

__all__ = ["compile", "load", "colocate", "Artifact", "InferenceSession", "NodeArg", "KoraError",
           "targets"]
__version__ = "0.1.0"

_HERE = os.path.dirname(os.path.abspath(__file__))
# An installed wheel carries the CLI and the CUDA measuring worker in kora/bin; the cuda
# target looks for the worker next to the running program (python here) unless told.
_WORKER = os.path.join(_HERE, "bin", "kora-cuda-worker")
if os.path.exists(_WORKER) and "KORA_CUDA_WORKER" not in os.environ:
    os.environ["KORA_CUDA_WORKER"] = _WORKER

_ONNX_TYPES = {"float32": "float", "float64": "double", "float16": "float16",
               "bfloat16": "bfloat16", "int8": "int8", "int16": "int16", "int32": "int32",
               "int64": "int64", "uint8": "uint8", "uint16": "uint16", "uint32": "uint32",
               "uint64": "uint64", "bool": "bool"}


def targets():
    """The targets kora compiles for ("cpu", "cuda")."""
    return list(_kora.targets())


class Artifact:
    """A compiled model: an artifact directory (manifest.json, kernels, weights.bin).

    ``path`` is where it lives; an artifact compiled without ``output_dir`` lives in a
    temporary directory removed with this object unless ``save`` copies it somewhere.
    ``summary`` is the compile summary (``kora compile --json``) when this process
    compiled it or the artifact kept one, else ``None``.
    """

    def __init__(self, path, summary=None, _temporary=False):
        self.path = os.path.abspath(os.fspath(path))
        manifest = os.path.join(self.path, "manifest.json")
        try:
            with open(manifest) as f:
                self.manifest = json.load(f)
        except FileNotFoundError:
            raise KoraError(f"'{self.path}' is not a kora artifact (no manifest.json)") from None
        except (OSError, ValueError) as e:
            raise KoraError(f"'{manifest}': cannot read it ({e})") from None
        if self.manifest.get("format") != "kora-artifact":
            raise KoraError(f"'{manifest}' is not a kora artifact manifest")
        if summary is None:
            summary = _stored_summary(self.path)
        self.summary = summary
        self._cleanup = (weakref.finalize(self, shutil.rmtree, self.path, True)
                         if _temporary else None)

    @property
    def target(self):
        return self.manifest.get("target", "cpu")

    @property
    def strategy(self):
        return self.manifest.get("strategy")

    @property
    def kernels(self):
        return len(self.manifest.get("kernels", []))

    @property
    def predicted_ms(self):
        """The plan's predicted latency: the sum of its kernels' measured costs."""
        return self.manifest.get("predicted_ms")

    @property
    def measured_ms(self):
        """The emitted plan's latency measured end to end when compiled, else None."""
        if self.summary and self.summary.get("measured_ms"):
            return self.summary["measured_ms"]
        return None

    def save(self, path):
        """Copies the artifact to ``path`` (replacing an artifact there) and returns it."""
        path = os.path.abspath(os.fspath(path))
        if path == self.path:
            return self
        if os.path.exists(path):
            if os.path.isdir(path) and not os.listdir(path):
                os.rmdir(path)
            elif os.path.exists(os.path.join(path, "manifest.json")):
                shutil.rmtree(path)
            else:
                raise KoraError(f"'{path}' exists and is not a kora artifact; not replacing it")
        shutil.copytree(self.path, path)
        return Artifact(path, self.summary)

    def report(self, path, measure=True, iters=20, threads=None):
        """Writes the plan report (one HTML page, as ``kora report``) to ``path``."""
        path = os.path.abspath(os.fspath(path))
        _kora.write_report(self.path, path, measure, iters, threads or 0)
        return path

    def __fspath__(self):
        return self.path

    def __repr__(self):
        ms = f", predicted {self.predicted_ms:.3f} ms" if self.predicted_ms is not None else ""
        return (f"<kora.Artifact {self.target} {self.strategy}, {self.kernels} kernels{ms} "
                f"at {self.path}>")


def _stored_summary(path):
    plan = os.path.join(path, "plan.json")
    if not os.path.exists(plan):
        return None
    try:
        with open(plan) as f:
            return json.load(f).get("summary")
    except (OSError, ValueError, AttributeError):
        return None


def _model_file(model, scratch):
    """A path to the model: itself, or an onnx.ModelProto written into ``scratch``."""
    if isinstance(model, (str, os.PathLike)):
        return os.fspath(model)
    if hasattr(model, "SerializeToString"):
        path = os.path.join(scratch, "model.onnx")
        with open(path, "wb") as f:
            f.write(model.SerializeToString())
        return path
    raise TypeError(f"kora.compile: model must be a path or an onnx.ModelProto, "
                    f"not {type(model).__name__}")


def compile(model, target="cpu", strategy="optimal", db=None, threads=None, output_dir=None,
            measure=True, verify=True, schedule="serial", dims=None, progress=True, bf16=False):
    """Compiles ``model`` (a path or an ``onnx.ModelProto``) for ``target``.

    strategy: "optimal" (the binary linear program), "greedy" or "unfused".
    db: the profile database (default ``$KORA_PROFILE_DB``, else ~/.cache/kora/profiles.db).
    threads: threads per kernel (default: all cores); part of the device fingerprint.
    output_dir: where the artifact goes (default: a temporary directory; see Artifact.save).
    measure: True (default) measures on demand: only the kernels of the plans the solver
        chooses, until the plan holds measured kernels only; "all" measures every candidate
        kernel the database lacks first (the full cost table, as ``kora profile --all``);
        False measures nothing (roofline costs for kernels not in the database).
    verify: False skips the check of the plan on the clock.
    schedule: "parallel" (cpu) also tries independent kernels in pairs, each on half the
        threads, and keeps that schedule where it is faster on the clock.
    dims: values of symbolic dimensions, e.g. {"batch": 8} (default 1).
    progress: print kora's progress lines to sys.stderr.
    bf16: (cpu) oneDNN convolutions and matmuls read bfloat16 source and weights and
        accumulate in float32: about 2x faster where the CPU has AVX512-BF16, at a relative
        error up to about 1e-2 (checked to 3e-2); measured and stored apart from float32.
    Returns an Artifact; raises KoraError naming the node or file at fault.
    """
    if strategy not in ("optimal", "greedy", "unfused"):
        raise ValueError(f"strategy must be optimal, greedy or unfused, not {strategy!r}")
    if schedule not in ("serial", "parallel"):
        raise ValueError(f"schedule must be serial or parallel, not {schedule!r}")
    if measure not in (True, False, "all"):
        raise ValueError(f"measure must be True, False or 'all', not {measure!r}")
    temporary = output_dir is None
    out = tempfile.mkdtemp(prefix="kora-artifact-") if temporary else os.fspath(output_dir)
    scratch = tempfile.mkdtemp(prefix="kora-model-")
    try:
        if temporary:
            os.rmdir(out)  # kora compile writes the directory itself
        path = _model_file(model, scratch)
        summary = _kora.compile(path, os.path.abspath(out), target, strategy, db or "",
                                int(threads or 0), measure is not False, bool(verify), schedule,
                                bool(progress),
                                {k: int(v) for k, v in (dims or {}).items()}, bool(bf16),
                                measure == "all")
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    return Artifact(out, json.loads(summary), _temporary=temporary)


def load(path):
    """The artifact at ``path`` (written by ``kora compile`` or ``Artifact.save``)."""
    return Artifact(path)


def colocate(lc, be, qps, target_ms, seconds=10, seed=1, headroom=1.2, threads=None,
             progress=True):
    """A latency-critical artifact ``lc`` serving Poisson requests at ``qps`` per second beside
    the best-effort artifacts ``be`` (one or a list) running in a loop, like ``kora colocate``.

    Artifacts are Artifact objects or paths, each a directory of its own. Four runs of
    ``seconds`` each: the LC alone, the BE alone, both naively, and both scheduled by kora
    (best-effort kernels admitted only while the request in flight keeps ``target_ms``).
    Returns a dict: "runs" maps "lc_alone", "be_alone", "naive" and "scheduled" to
    {"lc": {"requests", "p50_ms", "p99_ms", "max_ms", "violations"},
     "be": [{"artifact", "runs", "per_second", "error"}]}.
    """
    def path(a):
        return a.path if isinstance(a, Artifact) else os.fspath(a)
    be = [be] if isinstance(be, (str, os.PathLike, Artifact)) else list(be)
    return json.loads(_kora.colocate(path(lc), [path(b) for b in be], float(qps),
                                     float(target_ms), float(seconds), int(seed),
                                     float(headroom), int(threads or 0), bool(progress)))


class NodeArg:
    """An input or output of a session: name, shape, type ("tensor(float)"), numpy dtype."""

    def __init__(self, name, dtype, shape):
        self.name = name
        self.shape = list(shape)
        self.dtype = np.dtype(dtype) if dtype != "bfloat16" else dtype
        self.type = f"tensor({_ONNX_TYPES.get(dtype, dtype)})"

    def __repr__(self):
        return f"NodeArg(name={self.name!r}, type={self.type!r}, shape={self.shape})"


class InferenceSession:
    """Runs an artifact, as onnxruntime's InferenceSession runs a model.

    ``artifact`` is an Artifact or an artifact directory's path; ``threads`` defaults to the
    thread count it was compiled for; ``priority`` ("normal", "high" or "low") is the
    priority of a CUDA artifact's stream on the GPU (no effect on the CPU). One run at a
    time per artifact.
    """

    def __init__(self, artifact, threads=None, priority="normal"):
        self.artifact = artifact if isinstance(artifact, Artifact) else Artifact(artifact)
        self._session = _kora.Session(self.artifact.path, int(threads or 0), str(priority))
        self._inputs = [NodeArg(*t) for t in self._session.inputs()]
        self._outputs = [NodeArg(*t) for t in self._session.outputs()]

    def get_inputs(self):
        return list(self._inputs)

    def get_outputs(self):
        return list(self._outputs)

    def run(self, output_names, input_feed, run_options=None):
        """Runs the model on ``input_feed`` ({name: array}); returns the outputs named in
        ``output_names`` (all when None) as numpy arrays, in that order. Arrays that are
        C-contiguous and of the input's dtype are read in place, without a copy."""
        del run_options  # onnxruntime's signature; kora has none
        feeds = {}
        for name, value in input_feed.items():
            feeds[name] = np.ascontiguousarray(value)
        return self._session.run(list(output_names or []), feeds)

    def profile(self, iters=20):
        """Each kernel of the plan with its median time inside the running plan (ms) next to
        its predicted cost; run() once first to bind the inputs."""
        return self._session.profile_kernels(iters)

    def plan_ms(self):
        """The time of one run of the plan on the inputs of the last run (ms)."""
        return self._session.plan_ms()

    @property
    def threads(self):
        return self._session.threads

    @property
    def device(self):
        return self._session.device

    def __repr__(self):
        return (f"<kora.InferenceSession {self.artifact.path}: {len(self._inputs)} inputs, "
                f"{len(self._outputs)} outputs, {self._session.device}>")
