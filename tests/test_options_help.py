"""``ntkbo list --options`` / ``--presets`` and the algorithm pages' options tables: every option of
every registered algorithm explained, inert options marked as behaviour shows, the pages generated
from the same source."""

import copy
import pathlib

import jax
import numpy as np
import pytest

import ntkbo
from ntkbo import cli
from ntkbo.parts import set_option

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_every_option_of_every_algorithm_is_explained():
    """Each row ``ntkbo list --options NAME`` prints, for every registered name, has a non-empty
    meaning. Mutation caught (checked): ``random_search``'s ``Args:`` entry for ``q`` removed (its
    row then reads "(undocumented)")."""
    missing = [(name, opt) for name in ntkbo.algorithms.names()
               for opt, _, meaning, _ in cli.option_rows(name)
               if not meaning.strip() or meaning == "(undocumented)"]
    assert not missing, missing


def test_values_a_newcomer_asked_about_are_explained(capsys):
    """The values the first reader could not read: NeuralBO's ``W_std="paper"``,
    ``uncertainty="diag"`` and ``input_map``'s map, each explained on its line; the ``search.*``
    options a pathwise draw reads marked inert under the default ``thompson="independent"``, the
    others not."""
    assert cli.main(["list", "--options", "neural_bo"]) == 0
    lines = {ln.split(" = ")[0]: ln for ln in capsys.readouterr().out.splitlines()}
    assert "Here: \"paper\": (sqrt(d_in), 1, ..., 1)" in lines["network.W_std"]
    assert '"diag" (only U\'s diagonal kept' in lines["uncertainty"]
    assert "(the unit-cube coordinates themselves)" in lines["input_map"]
    marked = {k for k, ln in lines.items() if "[inert under these defaults" in ln}
    assert marked == {"search.num_restarts", "search.num_steps", "search.method"}
    assert "read only with thompson='pathwise'" in lines["search.method"]


def test_presets_are_listed_one_line_each(capsys):
    """``ntkbo list --presets neural_bo`` prints one line per preset of
    ``ntkbo.algorithms.presets``, each with the first sentence of its description and the count
    of options it changes (``preset_differences``, computed independently here); an algorithm
    without presets says so; an unknown name is an error naming ``--presets``."""
    assert cli.main(["list", "--presets", "neural_bo"]) == 0
    out = capsys.readouterr().out.splitlines()
    presets = ntkbo.algorithms.presets("neural_bo")
    assert [ln.split()[0] for ln in out] == list(presets)
    for ln, p in zip(out, presets):
        n = len(ntkbo.algorithms.preset_differences("neural_bo", p))
        assert f"({n} options changed from the defaults, 5 initial points)" in ln
    assert out[0].split(None, 1)[1].startswith("Algorithms 1 and 2 of Phan-Trong et al. (2023)")
    assert cli.main(["list", "--presets", "random_search"]) == 0
    assert capsys.readouterr().out == "random_search has no presets\n"
    assert cli.main(["list", "--presets", "nope"]) == 2
    assert "--presets: unknown algorithm 'nope'" in capsys.readouterr().err


def test_the_algorithm_pages_carry_the_generated_tables():
    """Every registered algorithm's factory has a table on a page (``OPTION_PAGES``), and each
    page holds exactly what ``write_option_pages`` writes (regenerate with ``python -c "from ntkbo
    import cli; cli.write_option_pages('docs/algorithms')"``). Mutation caught (checked): one
    meaning edited in a factory's docstring and not regenerated."""
    tabled = {n for names in cli.OPTION_PAGES.values() for n in names}
    assert {cli._factory_name(n) for n in ntkbo.algorithms.names()} <= tabled
    for page in cli.OPTION_PAGES:
        text = (ROOT / "docs" / "algorithms" / page).read_text(encoding="utf-8")
        assert cli.option_pages_block(page) in text, f"{page}: regenerate its options table"


# ---------------------------------------------------------------------------------------------
# inert marks against behaviour

#: A different value for each option ``ACTIVE_ONLY_WITH`` lists (and ``xi``, for mutations).
OTHER = {"search.num_restarts": 1, "search.num_steps": 2, "search.method": "adam", "beta": 0.25,
         "search.num_ts_candidates": 24, "fit.learning_rate": 0.5, "xi": 0.5,
         "search.log_ei": False, "fit.method": "adam", "fit.num_steps": 3,
         "fit.refit_until": 2, "fit.refit_ratio": 2.0}
#: Options an activating setting needs beside it (``fit.ard="auto"`` needs L-BFGS fits).
ALONGSIDE = {("fit.method", "adam"): {"fit.ard": True}}
#: Options a tiny run needs for an option to matter at all: the refit schedule's ratio applies
#: beyond ``refit_until`` (100 by default, far above a 5-evaluation run).
WITHIN_BUDGET = {"fit.refit_ratio": {"fit.refit_until": 2}}


def _program(name: str, **changes):
    """The traced program of a whole tiny run (Branin, 5 evaluations, 3 initial;
    ``jax.make_jaxpr`` of ``ntkbo.minimize``) of algorithm ``name`` with ``changes`` (dotted
    names for parts' fields): the jaxpr's text and its constants. Equal programs run on equal
    inputs give bit-identical results; tracing costs seconds where compiling would cost tens."""
    options: dict = {}
    for k, v in changes.items():
        set_option(options, k, v)
    algo = ntkbo.algorithms.get(name, **options)
    problem = ntkbo.benchmarks.get("branin")
    closed = jax.make_jaxpr(lambda k: ntkbo.minimize(algo, problem, 5, k, n_init=3))(
        jax.random.PRNGKey(3))
    return str(closed.jaxpr), [np.asarray(c) for c in closed.consts]


def _same(a, b) -> bool:
    return a[0] == b[0] and len(a[1]) == len(b[1]) and all(
        x.shape == y.shape and x.dtype == y.dtype and np.array_equal(x, y)
        for x, y in zip(a[1], b[1]))


def test_every_inert_rule_has_a_behaviour_check():
    assert {o for rules in cli.ACTIVE_ONLY_WITH.values() for o in rules} <= set(OTHER)


@pytest.mark.parametrize("name", sorted(cli.ACTIVE_ONLY_WITH))
def test_options_marked_inert_do_nothing_and_count_once_activated(name):
    """Under the factory's defaults, changing every option marked inert at once leaves the whole
    run's program (jaxpr and constants) identical, so its results bit-identical; under the
    settings its conditions name (``thompson="pathwise"``, ``acquisition="ucb"``,
    ``fit.enabled=True``, ...) each option is no longer marked, and changing it alone changes the
    program. Mutations caught (checked): ``xi`` marked inert for ``gp`` under every
    acquisition (changing it changes the EI program); NeuralBO's rule's value ``"independent"``
    (nothing is then marked under the defaults)."""
    rules = cli.ACTIVE_ONLY_WITH[name]
    defaults = ntkbo.algorithms.defaults(name)
    inert = cli.inert_options(name)
    assert inert and set(inert) <= set(rules)
    base = _program(name)
    assert _same(_program(name, **{o: OTHER[o] for o in inert}), base)
    refs: dict = {(): base}
    for option, conditions in rules.items():
        active: dict = {}
        for on, values in conditions:
            if cli._lookup(defaults, on) not in values:
                active[on] = values[0]
                active.update({k: v for k, v in ALONGSIDE.get((on, values[0]), {}).items()
                               if cli._lookup(defaults, k) is not None})  # where it has it
        active.update(WITHIN_BUDGET.get(option, {}))
        shown = copy.deepcopy(defaults)
        for k, v in active.items():
            set_option(shown, k, v)
        assert option not in cli.inert_options(name, shown)
        key = tuple(sorted(active.items()))
        if key not in refs:
            refs[key] = _program(name, **active)
        assert not _same(_program(name, **active, **{option: OTHER[option]}), refs[key]), (
            name, active, option)
