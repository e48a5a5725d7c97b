"""The one Numba decorator of the package.

Compiled kernels are cached on disk.  Numba's cache does not notice edits to helpers that live in
another module (nor a new version of this package), so the cache lives in a directory keyed by a
hash of the package's sources and Numba's version: any change gives a fresh cache, an unchanged
package starts warm.  The directory is ``$XDG_CACHE_HOME/ejce_nb/<hash>`` (``~/.cache`` by default,
the system's temporary directory when that is not writable), or ``$NUMBA_CACHE_DIR/ejce_nb/<hash>``
when Numba's own switch is set (``CACHE_DIR``).  Inside it each kernel is found by its module's
path within the package (``PackageCacheLocator``, through Numba's ``CACHE_LOCATOR_CLASSES``), and
Numba stamps each source file by its content: so the cache does not depend on where the package
is installed, and one cache serves a second virtual environment of the same version, a copied
image or the workers of a cluster (``ejce-nb compile`` fills it; ``cache_files`` and
``install_cache_files`` carry it to another machine).  Beside Numba's files it holds ``callees/``:
for a kernel declared with ``load_after``, the signatures its callees were compiled for, so that a
later process loads their own code before the kernel (``callees_first``).

Every compilation of one of the package's kernels is announced once, before it starts, with
what it compiles, and again when it ends (with its duration): on the logger ``ejce_nb`` (level
INFO), whose default handler writes to standard error.  Loading a kernel from the cache is not
announced (it takes a fraction of a second to a few seconds).

Environment switches:
  EJCE_NB_CACHE=0      compile in memory only (no on-disk cache)
  EJCE_NB_QUIET=1      no compile announcements on standard error (the logger still gets them)
  EJCE_NB_COMPILE_LOG=FILE  append a line per compiled kernel to FILE: seconds, kernel, process
  NUMBA_CACHE_DIR=...  the root of the cache (Numba's own switch)
"""
import hashlib
import logging
import os
import pickle
import sys
import tempfile
import threading
import time
import warnings

import numba
from numba.core import event as _event
from numba.core.caching import UserProvidedCacheLocator
from numba.core.errors import NumbaIRAssumptionWarning

# Numba's internal check of its own IR ("please report") fires on some of the package's inlined
# overloads while they compile; it says nothing about the caller's code or results
warnings.filterwarnings("ignore", category=NumbaIRAssumptionWarning, module=r".*[/\\]ejce_nb[/\\]")

_PKG = os.path.dirname(os.path.abspath(__file__))
_PKG_REAL = os.path.realpath(_PKG)


def _source_hash():
    h = hashlib.sha1()
    for root, dirs, files in os.walk(_PKG):
        dirs[:] = sorted(d for d in dirs if not d.startswith((".", "__")))
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                with open(path, "rb") as f:
                    h.update(os.path.relpath(path, _PKG).encode())
                    h.update(f.read())
    h.update(numba.__version__.encode())
    return h.hexdigest()[:16]


def _cache_root():
    if os.environ.get("NUMBA_CACHE_DIR"):
        bases = (os.environ["NUMBA_CACHE_DIR"],)
    else:
        bases = (os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache"),
                 tempfile.gettempdir())
    for root in bases:
        path = os.path.join(root, "ejce_nb", _source_hash())
        try:
            os.makedirs(path, exist_ok=True)
            if os.access(path, os.W_OK):
                return path
        except OSError:
            continue
    return None


class PackageCacheLocator(UserProvidedCacheLocator):
    """Numba's cache locator for this package's kernels: the cache directory ``CACHE_DIR``, then the
    kernel's module path within the package (``core/spatial.py`` -> ``CACHE_DIR/core``), whatever
    folder the package is installed in; None for any other function (Numba's own locators serve
    those, as before)."""

    def __init__(self, py_func, py_file):
        super().__init__(py_func, py_file)
        rel = os.path.relpath(os.path.dirname(os.path.realpath(py_file)), _PKG_REAL)
        self.package_path = os.path.join(CACHE_DIR, "" if rel == "." else rel)

    def get_cache_path(self):
        return self.package_path

    @classmethod
    def from_function(cls, py_func, py_file):
        if not CACHE or not os.path.realpath(py_file).startswith(_PKG_REAL + os.sep) or not os.path.exists(py_file):
            return None
        self = cls(py_func, py_file)
        try:
            self.ensure_cache_path()
        except OSError:
            return None
        return self


CACHE = os.environ.get("EJCE_NB_CACHE", "1").strip().lower() not in ("0", "false", "no", "off")
CACHE_DIR = _cache_root() if CACHE else None
if CACHE_DIR is None:
    CACHE = False
else:
    # this package's locator first, then the ones Numba would use anyway (the user's own list, or
    # Numba's defaults): functions outside the package are cached where they always were
    _others = numba.config.CACHE_LOCATOR_CLASSES or ("UserProvidedCacheLocator,InTreeCacheLocator,"
                                                    "UserWideCacheLocator,IPythonCacheLocator,ZipCacheLocator")
    numba.config.CACHE_LOCATOR_CLASSES = f"{__name__}.PackageCacheLocator,{_others}"


def cache_is_cold():
    """True when this package's kernels have not been compiled into the on-disk cache yet (the
    first run compiles them: minutes), or when there is no on-disk cache."""
    if not CACHE:
        return True
    root = CACHE_DIR
    return not any(name.endswith(".nbi") for _, _, files in os.walk(root) for name in files)


def compile_elsewhere(fn, *args):
    """Run ``fn(*args)`` in a second process, to compile kernels into the on-disk cache while this
    process compiles others (Numba compiles in one thread); returns a function that waits for it.
    Call that function before the first call of a kernel ``fn`` compiles: the call then loads the
    kernel from the cache.  Nothing starts (the function returned waits for nothing) where the
    cache is warm or off, or with one CPU; a second process that fails costs nothing but the
    compile it would have saved.  ``fn`` must be importable (spawned processes import it)."""
    try:
        cpus = len(os.sched_getaffinity(0))
    except AttributeError:
        cpus = os.cpu_count() or 1
    if cpus < 2 or not CACHE or not cache_is_cold():     # (cache_is_cold is True without a cache)
        return lambda: None
    import multiprocessing

    p = multiprocessing.get_context("spawn").Process(target=fn, args=args, daemon=True)
    p.start()
    return p.join


def _robust(d):
    """Make the dispatcher ``d`` treat a cache entry it cannot read (a corrupted or truncated file,
    one written by another version of a library) as missing: it compiles again and rewrites the
    entry, instead of failing."""
    cache = getattr(d, "_cache", None)
    if cache is None or not hasattr(cache, "load_overload"):
        return d
    load, save = cache.load_overload, cache.save_overload

    def load_overload(sig, target_context):
        try:
            return load(sig, target_context)
        except Exception:       # noqa: BLE001 - whatever the file holds, compiling again is right
            return None

    def save_overload(sig, data):
        try:
            save(sig, data)
        except Exception:       # noqa: BLE001 - an unreadable index: start it again
            try:
                index = cache._cache_file._index_path
                if os.path.exists(index):
                    os.remove(index)
                save(sig, data)
            except Exception:   # noqa: BLE001 - caching is an optimisation: never fail a call for it
                pass

    cache.load_overload = load_overload
    cache.save_overload = save_overload
    return d


def jit(*args, **kwargs):
    """``numba.njit`` with the package's options (cache, no fastmath: results must be exact, no
    reference counting)."""
    kwargs.setdefault("cache", CACHE)
    kwargs.setdefault("nogil", True)
    kwargs.setdefault("error_model", "numpy")
    # no reference counting: kernels allocate nothing (workspaces come from Python) and their
    # views of the buffers live only during a call, so counting references would only cost time
    kwargs.setdefault("_nrt", False)
    if args and callable(args[0]):
        return _robust(numba.njit(**kwargs)(args[0]))
    deco = numba.njit(*args, **kwargs)
    return lambda f: _robust(deco(f))


def pjit(*args, **kwargs):
    """The batch drivers: ``jit`` with ``parallel=True`` (prange over samples)."""
    kwargs["parallel"] = True
    return jit(*args, **kwargs)


def n_chunks(B):
    """Chunks of a batch of B states: a few per thread for balance, never more than B."""
    return max(1, min(B, 4 * numba.get_num_threads()))


def entry(fn):
    """A single-state kernel entry of a public function.

    It is compiled once, for the argument types the input layer produces (``ready``), and then
    refuses other types with TypeError instead of compiling again: a public function may hand
    it the caller's arrays untouched (its fast path) and fall back to the input layer, which
    converts and checks them, when they are not float64, C-contiguous and writeable."""
    d = jit(fn)
    d.ready = False
    return d


def ready(d, args):
    """Compile the entry ``d`` for the types of ``args`` (or load it from the cache) and close it."""
    if not d.ready:
        if isinstance(d, numba.core.dispatcher.Dispatcher):
            callees_first(d)
            d.compile(tuple(numba.typeof(a) for a in args))
            d.disable_compile()
            remember_callees(d)
        d.ready = True


def call(d, *args):
    """Call the entry ``d`` from the input layer (compiling it for these types on first use)."""
    if not d.ready:
        ready(d, args)
    return d(*args)


# ---------------------------------------------------------------------------- callees before callers
def _callee_file(d):
    f = d.py_func
    key = getattr(d, "callee_key", None)
    name = f"{f.__module__}.{f.__qualname__}" + ("" if key is None else f".{key}")
    return os.path.join(CACHE_DIR, "callees", f"{name}.pkl")


def callees_first(d):
    """Before the kernel ``d`` first runs in this process, load the kernels ``d.callees`` (a
    tuple of dispatchers) for the signatures recorded when ``d`` was compiled.

    Numba caches a kernel's object code with copies of the functions it calls, linked in and
    optimised a second time with it, and the first definition of a function loaded in a process
    is the one every later kernel calls. The process that compiles ``d`` has compiled its callees
    before it, so ``d`` calls their own code; a process that loads ``d`` from the cache has
    nothing before it, and ``d`` runs its copies, which can be slower (the humanoid's
    ``rnea_derivatives``: 18.8-18.9 us a call with its copy of ``rnea_tangents``, 14.8-15.4 with
    the function's own code). So this loads the callees first, with Numba's public
    ``Dispatcher.compile`` (from the cache: a fraction of a second), and records their signatures
    after ``d``'s first compile (``remember_callees``)."""
    if not CACHE or getattr(d, "callees_loaded", True):
        return
    d.callees_loaded = True
    if d.signatures:        # d is already loaded: too late
        return
    try:
        with open(_callee_file(d), "rb") as fh:
            recorded = pickle.load(fh)
    except Exception:       # noqa: BLE001 - nothing recorded (or unreadable): d compiles its callees
        return
    for c, sigs in zip(d.callees, recorded):
        for sig in sigs:
            c.compile(sig)


def remember_callees(d):
    """Record the signatures of ``d.callees`` for ``callees_first`` once ``d`` has run (the first
    process that compiles ``d`` writes them)."""
    if not CACHE or getattr(d, "callees_recorded", True):
        return
    d.callees_recorded = True
    path = _callee_file(d)
    sigs = [list(c.signatures) for c in d.callees]
    if os.path.exists(path) or not all(sigs):     # d loaded from the cache: its callees were not compiled
        return
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = f"{path}.{os.getpid()}"
        with open(tmp, "wb") as fh:
            pickle.dump(sigs, fh)
        os.replace(tmp, path)
    except Exception:       # noqa: BLE001 - an optimisation: never fail a call for it
        pass


def load_after(d, callees, key=None):
    """Declare the kernels that ``d`` calls whose own code should load before ``d`` (see
    ``callees_first``); ``key`` tells apart kernels of the same name (closures made for each kind
    of model)."""
    if isinstance(d, numba.core.dispatcher.Dispatcher):
        d.callees = tuple(callees)
        d.callees_loaded = d.callees_recorded = False
        d.callee_key = key
    return d


# ---------------------------------------------------------------------------- compile announcements
log = logging.getLogger("ejce_nb")


def quiet():
    """True when EJCE_NB_QUIET asks for no announcements on standard error."""
    return os.environ.get("EJCE_NB_QUIET", "").strip().lower() not in ("", "0", "false", "no", "off")


class _StderrHandler(logging.Handler):
    """The default handler of the ``ejce_nb`` logger: the standard error of the moment (so that a
    redirected or captured ``sys.stderr`` gets it), silent under EJCE_NB_QUIET=1."""

    def emit(self, record):
        if quiet():
            return
        try:
            sys.stderr.write(self.format(record) + "\n")
            sys.stderr.flush()
        except Exception:   # noqa: BLE001 - an announcement never fails a computation
            pass


if not log.handlers:
    _h = _StderrHandler()
    _h.setFormatter(logging.Formatter("ejce_nb: %(message)s"))
    log.addHandler(_h)
    log.setLevel(logging.INFO)
    log.propagate = False


def _what(dispatcher):
    """'rnea_many (ejce_nb.rnea: inverse dynamics, ...)': a kernel's name and its module's first line."""
    f = getattr(dispatcher, "py_func", None)
    name = getattr(f, "__name__", str(dispatcher))
    mod = sys.modules.get(getattr(f, "__module__", ""), None)
    doc = ((getattr(mod, "__doc__", None) or "").strip().splitlines() or [""])[0].rstrip(".,:;")
    where = getattr(f, "__module__", "?")
    return f"{name} ({where}{': ' + doc[:90] if doc else ''})"


# seconds between the lines that say a long compilation is still going on
HEARTBEAT = 8.0


class _Heartbeat:
    """A line every ``HEARTBEAT`` seconds while one compilation lasts, so that a long one never
    looks like a hang (the compiling thread holds the GIL in short turns: this thread gets its own)."""

    def __init__(self, name):
        self._done = threading.Event()
        self._name = name
        self._t0 = time.perf_counter()
        if not quiet():
            threading.Thread(target=self._run, name="ejce_nb-compile-heartbeat", daemon=True).start()

    def _run(self):
        while not self._done.wait(HEARTBEAT):
            log.info(f"still compiling {self._name} ({time.perf_counter() - self._t0:.0f} s so far) ...")

    def stop(self):
        self._done.set()


class _CompileAnnouncer(_event.Listener):
    """Announces the outermost compilation of a kernel of this package (the kernels it calls are
    compiled inside it), once per kernel and signature, and says every ``HEARTBEAT`` seconds that
    it is still going on."""

    def __init__(self):
        self._local = threading.local()

    def _stack(self):
        st = getattr(self._local, "stack", None)
        if st is None:
            st = self._local.stack = []
        return st

    def on_start(self, event):
        st = self._stack()
        d = event.data.get("dispatcher") if event.data else None
        mod = getattr(getattr(d, "py_func", None), "__module__", "") or ""
        ours = mod == "ejce_nb" or mod.startswith("ejce_nb.")
        if not st and ours:
            where = "cached on disk for later runs" if CACHE else "in memory only: EJCE_NB_CACHE=0"
            log.info(f"compiling {_what(d)} for its first use with these argument types ({where}); "
                     "this can take a minute or more on a small machine ...")
            name = getattr(getattr(d, "py_func", None), "__name__", str(d))
            st.append((d, time.perf_counter(), _Heartbeat(name)))
        else:
            st.append((None, 0.0, None))

    def on_end(self, event):
        st = self._stack()
        if not st:
            return
        d, t0, beat = st.pop()
        if beat is not None:
            beat.stop()
        if d is not None:
            f = getattr(d, "py_func", None)
            dt = time.perf_counter() - t0
            _COMPILE_TIME[0] += dt
            log.info(f"compiled {getattr(f, '__name__', d)} in {dt:.1f} s")
            _record(f"{dt:.2f}\t{getattr(f, '__module__', '?')}.{getattr(f, '__qualname__', d)}\t{os.getpid()}")


ANNOUNCER = _CompileAnnouncer()
_event.register("numba:compile", ANNOUNCER)


def _record(line):
    """Append ``line`` to the file EJCE_NB_COMPILE_LOG names, if any: one line per compiled kernel
    (seconds, kernel, process), to see where a program's compile time goes."""
    path = os.environ.get("EJCE_NB_COMPILE_LOG")
    if path:
        try:
            with open(path, "a") as fh:
                fh.write(line + "\n")
        except OSError:
            pass


def compile_seconds():
    """Seconds this process has spent compiling kernels so far (for figures that exclude it)."""
    return _COMPILE_TIME[0]


_COMPILE_TIME = [0.0]


# ---------------------------------------------------------------------------- carrying the cache
def cache_files():
    """{path within ``CACHE_DIR``: bytes} of every file of this package's on-disk cache ({} without
    one): what ``install_cache_files`` writes into another process's cache (a Dask worker's,
    a copied image's)."""
    files = {}
    if not CACHE:
        return files
    for root, _, names in os.walk(CACHE_DIR):
        for name in names:
            if name.endswith((".nbi", ".nbc", ".pkl")):
                path = os.path.join(root, name)
                try:
                    with open(path, "rb") as fh:
                        files[os.path.relpath(path, CACHE_DIR)] = fh.read()
                except OSError:
                    continue
    return files


def install_cache_files(files):
    """Write ``files`` (from ``cache_files`` of a process running the same package and Numba) into
    this process's cache where it lacks them; each file appears whole or not at all.  Returns
    the number written.  A kernel already compiled or loaded in this process is not affected;
    the others load from these files when first called.  Entries made for another kind of CPU
    are never used there: Numba keys each entry by the machine it was compiled for."""
    if not CACHE:
        return 0
    n = 0
    for rel, data in files.items():
        path = os.path.normpath(os.path.join(CACHE_DIR, rel))
        if not path.startswith(os.path.normpath(CACHE_DIR) + os.sep) or os.path.exists(path):
            continue
        try:
            os.makedirs(os.path.dirname(path), exist_ok=True)
            tmp = f"{path}.{os.getpid()}.tmp"
            with open(tmp, "wb") as fh:
                fh.write(data)
            os.replace(tmp, path)
            n += 1
        except OSError:
            continue
    return n
