"""What the README and the tutorials tell a user to write runs, and what they say is so: a bare
function or a problem's name given as ``problem`` is refused with what to write instead; a study on
a search space resumes with ``ntkbo.space.load`` and ``ntkbo.ask_tell.load`` given its space says
so; tutorial 04's account of noise matches its own output."""

import pathlib

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from markdown_blocks import blocks

import ntkbo

ROOT = pathlib.Path(__file__).resolve().parent.parent


def test_a_bare_function_or_a_name_as_problem_says_what_to_write():
    """``minimize`` given a JAX function without bounds, or a registered problem's name, raises a
    ``ValueError`` naming ``problem`` and the call that builds one; the call it names for the
    function, run as written, works. Mutation caught (checked): the former message, which for a
    name offered only ``Problem(...)``/``numpy_problem`` (no ``benchmarks.get``)."""
    algo = ntkbo.algorithms.random_search()
    key = jax.random.PRNGKey(0)

    def f(x):
        return jnp.sum((x - 0.25) ** 2)

    with pytest.raises(ValueError, match=r"^problem must be .*got function.*"
                                         r"ntkbo\.benchmarks\.Problem\(name=\"mine\", fn=f, "
                                         r"bounds=jnp\.array\(\[lower, upper\]\)\)"):
        ntkbo.minimize(algo, f, 4, key)  # pyright: ignore[reportArgumentType]
    with pytest.raises(ValueError, match=r"^problem must be .*got str 'branin'.*"
                                         r"ntkbo\.benchmarks\.get\('branin'\)"):
        ntkbo.minimize(algo, "branin", 4, key)  # pyright: ignore[reportArgumentType]
    lower, upper = [0.0, 0.0], [1.0, 1.0]
    problem = ntkbo.benchmarks.Problem(name="mine", fn=f, bounds=jnp.array([lower, upper]))
    result = ntkbo.minimize(algo, problem, 4, key, n_init=2)
    np.testing.assert_allclose(result.f, jax.vmap(f)(result.x), rtol=1e-12)  # f as written


@pytest.fixture(scope="module")
def space_study(tmp_path_factory):
    """A saved random-search study on a two-parameter space, after one ask and tell."""
    algo = ntkbo.algorithms.random_search()
    space = ntkbo.space.Space([ntkbo.space.Float("lr", 1e-5, 1e-1, log=True),
                               ntkbo.space.Int("layers", 1, 8)])
    study = ntkbo.space.start(algo, space, jax.random.PRNGKey(0), n_init=2)
    params, study = ntkbo.space.ask(algo, study, space)
    study = ntkbo.space.tell(algo, study, space, params, [1.0] * len(params))
    path = tmp_path_factory.mktemp("space") / "study.msgpack"
    ntkbo.ask_tell.save(path, study)
    return algo, space, study, path


@pytest.mark.parametrize("given", ["space", None])
def test_ask_tell_load_of_a_space_study_names_space_load(space_study, given):
    """``ntkbo.ask_tell.load`` given the study's ``Space`` (or ``None``) where bounds go refuses
    with a ``ValueError`` naming ``bounds`` and ``ntkbo.space.load``, leaving the file as it was;
    ``ntkbo.space.load`` then resumes the study with its space and its record. Mutation caught
    (checked): the refusal removed (``None`` then fails inside ``jnp.asarray`` with "None is not a
    valid value", the ``Space`` with a ``TypeError`` from ``float()``)."""
    algo, space, study, path = space_study
    before = path.read_bytes()
    with pytest.raises(ValueError, match=r"^bounds: .*resume it with ntkbo\.space\.load\(path, "
                                         r"algo\)"):
        ntkbo.ask_tell.load(path, algo, space if given == "space" else None)
    assert path.read_bytes() == before
    resumed = ntkbo.space.load(path, algo)
    assert resumed.space == space
    np.testing.assert_array_equal(resumed.told_x, study.told_x)
    np.testing.assert_array_equal(resumed.told_y, study.told_y)
    # the unit box it ran on is accepted too, and the saved space comes back with the study
    assert ntkbo.ask_tell.load(path, algo, space.bounds).space == space


def test_the_readme_resumes_a_space_study_with_space_load():
    """The README's search-space example resumes with ``ntkbo.space.load`` (its blocks run in
    ``tests/test_readme.py``), not ``ask_tell.load``, which refuses a ``Space``. Mutation caught:
    the former comment "resume with ask_tell.load"."""
    code = "\n".join(blocks(ROOT / "README.md", "python"))
    assert 'study = ntkbo.space.load("study.msgpack", algo)' in code
    assert "resume with ask_tell.load" not in code


def test_tutorial_04_says_what_its_noise_example_prints():
    """Tutorial 04's noise example (its first two blocks, run as written) shows what its text
    says: the same points at every noise level, the observed best falling as the noise grows, and
    its noise-free value the same, i.e. the same point picked. Mutation caught: the former
    comment "the noise moves the pick" (its ``best_f`` is equal across the noise levels)."""
    page = ROOT / "docs" / "tutorials" / "04-vmap.md"
    text = page.read_text()
    assert "the noise moves the pick" not in text
    assert "the same: the same point picked" in text and "falls as the noise grows" in text
    namespace: dict = {"__name__": "tutorial_04"}
    for source in blocks(page)[:2]:
        exec(compile(source, "docs/tutorials/04-vmap.md", "exec"), namespace)
    by_noise = namespace["by_noise"]
    x = np.asarray(by_noise.x)
    assert all(np.array_equal(x[0], xi) for xi in x)
    best_y = np.asarray(by_noise.best_y)
    assert np.all(np.diff(best_y) < 0)
    assert np.all(np.asarray(by_noise.best_f) == np.asarray(by_noise.best_f)[0])


def test_user_pages_cite_only_what_exists():
    """The pages of docs/ (the dated decision log apart) name no README section that the README
    lacks, and no page links the design notes kept outside the repository (``../shared/``).
    Mutations caught (checked): status.md's former 'the README's "Status on fresh keys"' (a
    section since moved to docs/results.md); ci.md's former ``../shared/design.md``."""
    import re

    headings = set(re.findall(r"^#+ (.+)$", (ROOT / "README.md").read_text(), re.M))
    for page in sorted((ROOT / "docs").rglob("*.md")):
        text = page.read_text()
        assert not re.search(r"(\.\./)+shared/", text), page
        if page.name == "decisions.md":
            continue  # a dated log: it cites what held on its dates
        for section in re.findall(r"README's \"([^\"]+)\"", text):
            assert section in headings, f"{page}: the README has no section {section!r}"
