"""Proof that nothing moved: every algorithm's suggestions and final state, bit for bit.

``record`` runs, for every registered algorithm (``ntkbo.algorithms.names()``) with its defaults
and with each of its presets (``ntkbo.algorithms.presets(name)``, run as they are: a preset's width
500 runs at 500), one short fixed sequence in float64, and writes what came out to one ``.npz``:

* the problem by the algorithm's kind: ``branin`` (2-D) for most, ``branin_constrained`` (2-D, one
  constraint) for those that model constraints, ``heat_equation_1`` (2-D) for PINN-BO's names;
  the algorithm is built by ``ntkbo.algorithms.for_problem`` (its PDE, its number of constraints);
* ``init`` on a fixed key, ``update`` with a fixed initial design of ``N_INIT`` points (drawn by
  numpy, independently of ntkbo) and their noise-free values, then ``ROUNDS`` rounds of
  ``suggest`` (fixed keys) -> evaluate -> ``update``, each function under ``jax.jit`` as the drivers
  run them;
* recorded: each round's suggestion ``x`` and ``info`` leaves, each update's ``info`` leaves
  (``update_init.info``, ``round<r>.update_info``), and the final state's leaves, each
  as its raw array and a SHA-256 of dtype, shape and bytes; an algorithm that raises is recorded as
  an error (its message), not skipped.

``compare BASE NEW`` prints a table (algorithm, preset, ``identical`` / ``differs`` with the largest
absolute difference and the leaves that differ / ``missing`` / ``error``) and exits 1 if any case
is not identical. A difference is expected only where a change meant to change numbers (a default,
a preset) was made; a refactoring that moves code must leave every case identical.
``compare --retyped`` is for a change of the ``info`` types (a dict becoming a NamedTuple with
renamed, stacked or reshaped fields, a diagnostic moved from the state to an ``info``): each base
leaf must be found with the same bits in the new record (``MOVES`` lists the renames of info
leaves, ``FIELD_MOVES`` the state fields moved into a type per form), and the
table lists the leaves without a counterpart (``-``: only in the base, ``+``: only in the new)
and those matched under another name or shape (``~``). ``merge`` joins records made in
parallel parts (``record --algos``). The commands: ``benchmarks/README.md``.

Same machine, same jax and jaxlib: bits are compared, and another CPU or library version may
legitimately change them (``compare`` prints both environments when they differ).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import platform
import re
import subprocess
import sys
import time

import numpy as np

#: Initial design size, suggest/update rounds, and the buffer capacity (a power of two above the
#: observations of the sequence for the largest batch the registry's algorithms suggest).
N_INIT, ROUNDS = 3, 2

#: Problems by the kind of algorithm.
PROBLEMS = {"plain": "branin", "constrained": "branin_constrained", "pde": "heat_equation_1"}

#: The fixed keys (integers for ``jax.random.PRNGKey``) and the design's numpy seed.
INIT_KEY, SUGGEST_KEYS, DESIGN_SEED = 0, (11, 12, 13, 14), 20261127

DEFAULT = "(defaults)"


def _problem_for(name: str):
    from ntkbo import algorithms, benchmarks
    kind = ("pde" if algorithms.uses_pde(name) else
            "constrained" if algorithms.models_constraints(name) else "plain")
    return benchmarks.get(PROBLEMS[kind])


def cases(algos=None) -> list[tuple[str, str | None]]:
    """``(name, preset)`` pairs: each name's defaults (preset None), then each of its presets."""
    from ntkbo import algorithms as A
    names = A.names() if algos is None else algos
    return [(n, p) for n in names for p in (None, *A.presets(n))]


def _leaves(prefix: str, tree) -> dict[str, np.ndarray]:
    """``{prefix + key path: array}`` for the leaves of ``tree`` (typed PRNG keys as their data)."""
    import jax
    out = {}
    for path, leaf in jax.tree_util.tree_flatten_with_path(tree)[0]:
        if isinstance(leaf, jax.Array) and jax.dtypes.issubdtype(leaf.dtype,
                                                                 jax.dtypes.prng_key):
            leaf = jax.random.key_data(leaf)
        out[prefix + jax.tree_util.keystr(path)] = np.asarray(leaf)
    return out


def digest(a: np.ndarray) -> str:
    """SHA-256 of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(a.tobytes())
    return h.hexdigest()


def run_case(name: str, preset: str | None, rounds: int = ROUNDS, **extra
             ) -> dict[str, np.ndarray]:
    """The arrays of one case (``_leaves`` names), as the module docstring describes; ``extra``
    options over the preset's (``record --set``: a deliberate change, to check ``compare``)."""
    import jax
    import jax.numpy as jnp
    from ntkbo import algorithms as A

    problem = _problem_for(name)
    options = ({} if preset is None else {"preset": preset}) | extra
    algo = A.for_problem(name, problem, **options)
    lo, hi = (np.asarray(b, np.float64) for b in problem.bounds)
    k = int(getattr(algo, "n_constraints", 0) or 0)

    def evaluate(x):
        f = jax.vmap(problem.fn)(x)
        if not k:
            return f
        c = jax.vmap(problem.constraints)(x).astype(f.dtype)
        return jnp.concatenate([f[:, None], c.reshape(f.shape[0], -1)], axis=-1)

    rng = np.random.default_rng(DESIGN_SEED)
    x0 = jnp.asarray(lo + (hi - lo) * rng.uniform(size=(N_INIT, lo.size)))
    key = jax.random.PRNGKey(INIT_KEY)
    q = jax.eval_shape(lambda kk: algo.suggest(kk, algo.init(kk, problem.bounds, 16))[0],
                       key).shape[0]
    capacity = 1 << max(3, int(np.ceil(np.log2(N_INIT + rounds * q))))
    init = jax.jit(algo.init, static_argnums=2)
    suggest, update = jax.jit(algo.suggest), jax.jit(algo.update)
    state = init(key, jnp.asarray(problem.bounds), capacity)
    state, info0 = update(state, x0, evaluate(x0))
    out = _leaves("update_init.info", info0)
    for r in range(rounds):
        x, info = suggest(jax.random.PRNGKey(SUGGEST_KEYS[r]), state)
        out.update(_leaves(f"round{r}.x", x))
        out.update(_leaves(f"round{r}.info", info))
        state, uinfo = update(state, x, evaluate(x))
        out.update(_leaves(f"round{r}.update_info", uinfo))
    out.update(_leaves("state", state))
    return out


def environment() -> dict:
    """The versions and machine a record ran on, and the commit of the ``ntkbo`` it imported
    (with ``+dirty`` when ``ntkbo/`` differs from that commit)."""
    import jax
    import jaxlib
    import ntkbo
    root = os.path.dirname(os.path.dirname(os.path.abspath(ntkbo.__file__)))
    try:
        git = ["git", "-C", root]
        commit = subprocess.run(git + ["rev-parse", "HEAD"], capture_output=True,
                                text=True).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--", "ntkbo"], capture_output=True,
                               text=True).stdout.strip()
        commit += "+dirty" if commit and dirty else ""
    except OSError:
        commit = ""
    return {"commit": commit, "jax": jax.__version__, "jaxlib": jaxlib.__version__,
            "numpy": np.__version__, "python": platform.python_version(),
            "machine": platform.machine(), "processor": platform.processor(),
            "devices": [str(d) for d in jax.devices()], "x64": True,
            "n_init": N_INIT, "rounds": ROUNDS}


def _write(out: str, manifest: dict, arrays: dict) -> None:
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    tmp = out + ".tmp.npz"
    np.savez_compressed(tmp, __manifest__=np.asarray(json.dumps(manifest)), **arrays)
    os.replace(tmp, out)


def record(out: str, algos=None, log=sys.stderr, options=None, exclude=()) -> dict:
    """Runs ``cases(algos)`` and writes ``out`` (``.npz``: ``a<i>`` arrays and a JSON manifest
    ``{"environment", "cases": [{"algorithm", "preset", "seconds", "error" | "leaves":
    {leaf: [array key, sha256]}}]}`` as ``__manifest__``); returns the manifest. ``options``:
    name -> extra options for every case of that name (recorded in the manifest). ``exclude``:
    ``(name, preset)`` cases to leave out (recorded as skipped). The file is rewritten after each
    case, so a record stopped early keeps the cases it finished."""
    import jax
    jax.config.update("jax_enable_x64", True)
    from ntkbo import lapack_threads
    # one LAPACK thread, as every ntkbo run has had since the library pinned it: its results
    # are the ones to compare (independent of whether importing ntkbo still sets it)
    lapack_threads.set_lapack_threads(1)
    arrays, manifest = {}, {"environment": environment(), "cases": []}
    for name, preset in cases(algos):
        t0 = time.perf_counter()
        entry = {"algorithm": name, "preset": preset}
        if (name, preset or DEFAULT) in exclude:
            manifest["cases"].append({**entry, "skipped": True, "seconds": 0.0})
            continue
        extra = (options or {}).get(name, {})
        if extra:
            entry["options"] = extra
        try:
            leaves = run_case(name, preset, **extra)
        except Exception as err:  # recorded, so compare reports it instead of stopping
            entry["error"] = f"{type(err).__name__}: {err}"[:2000]
        else:
            entry["leaves"] = {}
            for leaf, a in leaves.items():
                key = f"a{len(arrays)}"
                arrays[key] = a
                entry["leaves"][leaf] = [key, digest(a)]
        entry["seconds"] = round(time.perf_counter() - t0, 2)
        manifest["cases"].append(entry)
        print(f"{name} {preset or DEFAULT}: {'error' if 'error' in entry else 'ok'} "
              f"{entry['seconds']:.1f} s", file=log, flush=True)
        _write(out, manifest, arrays)
    _write(out, manifest, arrays)
    return manifest


def merge(out: str, paths) -> dict:
    """Writes ``out``: the cases of the records ``paths`` (recorded in parts, e.g. in parallel
    processes with disjoint ``--algos``) in one file; the first record's environment, with every
    part's commit under ``"parts"``. A case skipped in one part and recorded in another is the
    recorded one; ``ValueError`` for a case recorded in two parts."""
    arrays, manifest, seen = {}, None, set()
    loaded = [(path, *load(path)) for path in paths]
    recorded = {(c["algorithm"], c["preset"]) for _, m, _ in loaded for c in m["cases"]
                if not c.get("skipped")}
    for path, m, z in loaded:
        if manifest is None:
            manifest = {"environment": dict(m["environment"]), "cases": []}
            manifest["environment"]["parts"] = []
        manifest["environment"]["parts"].append(m["environment"]["commit"])
        for case in m["cases"]:
            key = (case["algorithm"], case["preset"])
            if case.get("skipped") and (key in recorded or key in seen):
                continue
            if key in seen:
                raise ValueError(f"{path}: case {key} is in two parts")
            seen.add(key)
            case = dict(case)
            if "leaves" in case:
                leaves = {}
                for leaf, (k, h) in case["leaves"].items():
                    new = f"a{len(arrays)}"
                    arrays[new] = z[k]
                    leaves[leaf] = [new, h]
                case["leaves"] = leaves
            manifest["cases"].append(case)
    _write(out, manifest, arrays)
    return manifest


def load(path: str):
    """``(manifest, npz)`` of a recorded file."""
    z = np.load(path, allow_pickle=False)
    return json.loads(str(z["__manifest__"])), z


def _max_abs(a: np.ndarray, b: np.ndarray) -> float:
    if a.shape != b.shape:
        return float("nan")
    if a.dtype.kind in "fciub" and b.dtype.kind in "fciub":
        a, b = a.astype(np.float64) if a.dtype.kind != "c" else a, \
            b.astype(np.float64) if b.dtype.kind != "c" else b
        with np.errstate(invalid="ignore"):
            d = np.abs(a - b)
        both_nan = np.isnan(a) & np.isnan(b) if a.dtype.kind in "fc" else False
        d = np.where(both_nan | (a == b), 0.0, d)
        return float(np.nanmax(np.where(np.isnan(d), np.inf, d))) if d.size else 0.0
    return float("nan")


def _by_field(leaves: dict) -> dict:
    """``leaves`` with a dict key's path (``['name']``) written as a field's (``.name``): an
    ``info`` dict that became a NamedTuple with the same fields compares leaf for leaf."""
    return {re.sub(r"\['([A-Za-z_][A-Za-z0-9_]*)'\]", r".\1", k): v for k, v in leaves.items()}


#: ``compare(..., retyped=True)``: info fields an info re-typing renamed or stacked, as ``new
#: field: (old fields, function of the old arrays giving the new one)``; a leaf ``P.new`` is
#: matched against the base leaves ``P.old...`` of the same prefix ``P``.
MOVES = {
    "train_loss": (("loss_start", "loss"), lambda a, b: np.stack([a, b], axis=-1)),
    "train_grad_norm": (("grad_norm",), lambda a: a),
}

#: State fields moved into a field of a type per form (base prefix -> new prefix): NeuralUCB/TS's
#: features and diagonal of ``U`` into ``state.u``. A base leaf under such a prefix is matched with
#: the new leaf under the new prefix, the same bits; a placeholder the other form kept has none.
FIELD_MOVES = {
    "state.g_obs": "state.u.g_obs",
    "state.u_diag": "state.u.diag",
}


def _moved_field(leaf: str) -> str | None:
    """``leaf``'s name under :data:`FIELD_MOVES`, or None."""
    for old, new in FIELD_MOVES.items():
        if leaf == old or leaf.startswith(old + "."):
            return new + leaf[len(old):]
    return None


def _retyped(lb: dict, ln: dict, zb, zn) -> tuple[list[str], list[str], list[str], list[str]]:
    """``(differ, removed, added, retyped)`` leaf names of one case (``retyped``: the base leaves
    matched other than by name and digest), matching a base leaf with the new
    leaf of the same name (equal digests, or equal values under another shape of the same size
    and dtype), through :data:`MOVES`, or with the one field of a NamedTuple that took its
    place (``state.u`` and ``state.u.chol``)."""
    matched_new, differ, removed, retyped = set(), [], [], []
    moved_from = {}
    for leaf in ln:
        prefix, _, field = leaf.rpartition(".")
        if field in MOVES and leaf not in lb:
            olds = [f"{prefix}.{o}" for o in MOVES[field][0]]
            if all(o in lb for o in olds):
                for o in olds:
                    moved_from[o] = leaf
    for leaf, (key, digest_b) in lb.items():
        if leaf in ln:
            matched_new.add(leaf)
            if ln[leaf][1] == digest_b:
                continue
            a, b = zb[key], zn[ln[leaf][0]]
            retyped.append(leaf)
            if not (a.dtype == b.dtype and a.size == b.size
                    and np.array_equal(a.reshape(-1), b.reshape(-1), equal_nan=a.dtype.kind in "fc")):
                differ.append(leaf)
        elif leaf in moved_from:
            new_leaf = moved_from[leaf]
            matched_new.add(new_leaf)
            retyped.append(leaf)
            prefix = new_leaf.rpartition(".")[0]
            olds, fn = MOVES[new_leaf.rpartition(".")[2]]
            rebuilt = fn(*(zb[lb[f"{prefix}.{o}"][0]] for o in olds))
            if digest(rebuilt) != ln[new_leaf][1]:
                differ.append(leaf)
        elif (moved := _moved_field(leaf)) in ln and moved not in lb:
            matched_new.add(moved)
            retyped.append(leaf)
            if ln[moved][1] != digest_b:
                differ.append(leaf)
        else:
            removed.append(leaf)
    # a leaf wrapped into a NamedTuple of one field (``state.u`` -> ``state.u.chol``)
    for leaf in list(removed):
        inner = [x for x in ln if x.startswith(leaf + ".") and x not in matched_new]
        if len(inner) == 1:
            removed.remove(leaf)
            matched_new.add(inner[0])
            retyped.append(leaf)
            if ln[inner[0]][1] != lb[leaf][1]:
                differ.append(leaf)
    added = [leaf for leaf in ln if leaf not in matched_new]
    return sorted(set(differ)), removed, added, retyped


def compare(base: str, new: str, retyped: bool = False) -> tuple[list[dict], dict, dict]:
    """One row per case of either file: ``{"algorithm", "preset", "status", "max_abs",
    "leaves"}``, status ``identical`` / ``differs`` / ``missing in base|new`` / ``error``.

    ``retyped``: for a change of the ``info`` types, a case whose every base leaf is in the new
    record with the same bits (under its name, another shape of the same size, or a
    :data:`MOVES` or :data:`FIELD_MOVES` rename, or as the one field of a NamedTuple in its
    place) is
    ``identical (re-typed)``, its ``leaves`` listing the base leaves
    with no counterpart (``-name``), the new leaves (``+name``) and the base leaves matched under
    another name or shape (``~name``); the reader judges those."""
    (mb, zb), (mn, zn) = load(base), load(new)
    by_b = {(c["algorithm"], c["preset"]): c for c in mb["cases"]}
    by_n = {(c["algorithm"], c["preset"]): c for c in mn["cases"]}
    rows = []
    for key in list(by_b) + [k for k in by_n if k not in by_b]:
        row = {"algorithm": key[0], "preset": key[1] or DEFAULT, "max_abs": None, "leaves": []}
        b, n = by_b.get(key), by_n.get(key)
        if b is None or n is None:
            row["status"] = "missing in " + ("base" if b is None else "new")
        elif b.get("skipped") or n.get("skipped"):
            row["status"] = "skipped in " + ("base" if b.get("skipped") else "new")
        elif "error" in b or "error" in n:
            same = b.get("error") == n.get("error")
            row["status"] = "identical (same error)" if same else "error"
            row["leaves"] = [f"base: {b.get('error', 'ok')}"[:120],
                             f"new: {n.get('error', 'ok')}"[:120]]
        else:
            lb, ln = _by_field(b["leaves"]), _by_field(n["leaves"])
            if retyped:
                differ, removed, added, moved = _retyped(lb, ln, zb, zn)
                if not differ:
                    same = not removed and not added and not moved
                    row["status"] = "identical" if same else "identical (re-typed)"
                    row["leaves"] = ([f"-{x}" for x in removed] + [f"+{x}" for x in added]
                                     + [f"~{x}" for x in moved])
                    row["max_abs"] = 0.0
                    rows.append(row)
                    continue
            else:
                differ = [leaf for leaf in lb if leaf not in ln or lb[leaf][1] != ln[leaf][1]]
                differ += [leaf for leaf in ln if leaf not in lb]
            row["status"] = "differs" if differ else "identical"
            row["leaves"] = differ
            diffs = [_max_abs(zb[lb[leaf][0]], zn[ln[leaf][0]])
                     for leaf in differ if leaf in lb and leaf in ln]
            row["max_abs"] = max(diffs, default=float("nan")) if differ else 0.0
        rows.append(row)
    return rows, mb["environment"], mn["environment"]


def table(rows, max_leaves: int = 4) -> str:
    lines = ["| algorithm | preset | result | max abs diff | leaves that differ |",
             "|---|---|---|---:|---|"]
    for r in rows:
        diff = "" if r["max_abs"] is None else f"{r['max_abs']:.3g}"
        shown = r["leaves"][:max_leaves]
        more = len(r["leaves"]) - len(shown)
        leaves = ", ".join(f"`{leaf}`" for leaf in shown) + (f" (+{more} more)" if more > 0 else "")
        lines.append(f"| {r['algorithm']} | {r['preset']} | {r['status']} | {diff} | {leaves} |")
    return "\n".join(lines)


def summary(manifest: dict) -> str:
    """A Markdown summary of a recorded file (environment, each case's leaves and time)."""
    env = manifest["environment"]
    lines = ["# Bit-identity record", "",
             f"Commit `{env['commit']}`; jax {env['jax']}, jaxlib {env['jaxlib']}, numpy "
             f"{env['numpy']}, Python {env['python']} on {env['machine']} ({env['devices']}); "
             f"float64; {env['n_init']} initial points, {env['rounds']} suggest/update rounds "
             "(`benchmarks/bit_identity.py`).", "",
             "| algorithm | preset | leaves | seconds | status |", "|---|---|---:|---:|---|"]
    for c in manifest["cases"]:
        status = c["error"][:80] if "error" in c else "skipped" if c.get("skipped") else "ok"
        lines.append(f"| {c['algorithm']} | {c['preset'] or DEFAULT} | "
                     f"{len(c.get('leaves', {}))} | {c['seconds']:.1f} | {status} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = p.add_subparsers(dest="command", required=True)
    r = sub.add_parser("record", help="run every case and write an .npz")
    r.add_argument("--out", required=True)
    r.add_argument("--algos", default="all", help="comma-separated registry names, or 'all'")
    r.add_argument("--md", help="also write a Markdown summary here")
    r.add_argument("--exclude", action="append", default=[], metavar="NAME:PRESET",
                   help="leave a case out (PRESET '(defaults)' for the defaults; repeatable)")
    r.add_argument("--set", action="append", default=[], metavar="NAME.OPTION=JSON",
                   help="an extra option for algorithm NAME (a deliberate change; repeatable)")
    m = sub.add_parser("merge", help="join records made in parts into one file")
    m.add_argument("--out", required=True)
    m.add_argument("parts", nargs="+")
    m.add_argument("--md", help="also write a Markdown summary here")
    c = sub.add_parser("compare", help="compare two recorded files")
    c.add_argument("base")
    c.add_argument("new")
    c.add_argument("--md", help="also write the table here")
    c.add_argument("--retyped", action="store_true",
                   help="match info leaves renamed, reshaped or stacked by a change of the info "
                        "types (compare's docstring); such cases are 'identical (re-typed)'")
    args = p.parse_args(argv)
    if args.command == "record":
        algos = None if args.algos == "all" else args.algos.split(",")
        options = {}
        for item in args.set:
            target, value = item.split("=", 1)
            name, option = target.split(".", 1)
            options.setdefault(name, {})[option] = json.loads(value)
        exclude = {tuple(item.split(":", 1)) for item in args.exclude}
        manifest = record(args.out, algos, options=options, exclude=exclude)
        if args.md:
            with open(args.md, "w") as f:
                f.write(summary(manifest))
        return 0 if not any("error" in c for c in manifest["cases"]) else 1
    if args.command == "merge":
        manifest = merge(args.out, args.parts)
        if args.md:
            with open(args.md, "w") as f:
                f.write(summary(manifest))
        return 0
    rows, eb, en = compare(args.base, args.new, retyped=args.command == "compare" and args.retyped)
    text = table(rows)
    skip = {"commit", "parts"}
    if {k: v for k, v in eb.items() if k not in skip} != {k: v for k, v in en.items()
                                                           if k not in skip}:
        text = (f"environments differ: base {json.dumps(eb)}\nnew {json.dumps(en)}\n\n" + text)
    n_same = sum(r["status"].startswith("identical") for r in rows)
    text += f"\n\n{n_same} of {len(rows)} cases identical (base {eb['commit']}, new " \
            f"{en['commit']})."
    print(text)
    if args.md:
        with open(args.md, "w") as f:
            f.write(text + "\n")
    return 0 if n_same == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
