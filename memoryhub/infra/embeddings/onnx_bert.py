"""The BERT encoder of `local.NumpyBert`, as an ONNX graph built in memory for onnxruntime.

No PyPI package we know of ships all-MiniLM-L6-v2 as an ONNX file, and exporting one takes
PyTorch. The architecture is small and fixed, so the graph is written here node by node
from the safetensors weights (`onnx.helper`), serialized, and handed to onnxruntime as
bytes: nothing is written to disk and nothing is downloaded. It computes what `NumpyBert`
computes, then mean-pools (or takes CLS) over the real tokens, so the session returns one
sentence vector per text; tests/platform/test_embeddings.py checks the two agree.

Only standard ONNX operators (opset 17, for LayerNormalization). onnxruntime's fused
contrib kernels (Attention, SkipLayerNormalization, BiasGelu) measured no faster here: the
matrix products are nearly all of the time, and compiled kernels instead of numpy's
per-operation temporaries are what win it back.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

OPSET = 17
# The graph's names, which the provider feeds and reads.
INPUTS = ("input_ids", "attention_mask", "token_type_ids")
OUTPUT = "sentence_embedding"


def bert_onnx_model(
    config: dict[str, Any], tensors: dict[str, np.ndarray], *, cls_pooling: bool = False
) -> bytes:
    """The serialized ONNX model of a Hugging Face `BertModel` plus its sentence pooling.

    `tensors` are the checkpoint's weights, names without the "bert." prefix. Raises
    ImportError when the `onnx` package is missing, KeyError when a weight is. The
    activation is BERT's "gelu" (the erf form). Not checked with `onnx.checker` here (the
    test does): that serializes the 90 MB of weights once more, at every process start.
    """
    from onnx import TensorProto, helper

    graph = _Graph(tensors)
    heads = int(config.get("num_attention_heads", 12))
    eps = float(config.get("layer_norm_eps", 1e-12))
    width = tensors["embeddings.word_embeddings.weight"].shape[1]

    # Embeddings: word + token type + the first `tokens` rows of the position table.
    tokens = graph.node("Shape", ["input_ids"], "tokens", start=1, end=2)  # 1-D: [tokens]
    zero = graph.const("zero", np.array([0], dtype=np.int64))
    word = graph.node("Gather", [graph.weight("embeddings.word_embeddings.weight"), INPUTS[0]],
                      "word")
    kind = graph.node("Gather", [graph.weight("embeddings.token_type_embeddings.weight"),
                                 INPUTS[2]], "kind")
    position = graph.node("Slice", [graph.weight("embeddings.position_embeddings.weight"),
                                    zero, tokens, zero], "position")
    summed = graph.node("Add", [graph.node("Add", [word, kind], "word_kind"), position],
                        "embedded")
    x = graph.norm(summed, "embeddings.LayerNorm.", eps)

    # Padding gets a very negative score so softmax gives it no attention (as NumpyBert).
    mask = graph.node("Cast", [INPUTS[1]], "mask", to=TensorProto.FLOAT)
    blocked = graph.node("Sub", [graph.scalar("one", 1.0), mask], "blocked")
    bias = graph.node("Mul", [blocked, graph.scalar("minus_big", -1e9)], "mask_bias")
    bias = graph.node("Unsqueeze", [bias, graph.const("bias_axes", np.array([1, 2]))],
                      "attention_bias")

    for layer in range(int(config.get("num_hidden_layers", 6))):
        x = _encoder_layer(graph, x, bias, f"encoder.layer.{layer}.", heads, width, eps)

    if cls_pooling:
        graph.node("Gather", [x, graph.const("first", np.array(0))], OUTPUT, axis=1)
    else:
        # Mean over real tokens: padding must not dilute short texts.
        weights = graph.node("Unsqueeze", [mask, graph.const("pool_axis", np.array([2]))],
                             "pool_weights")
        axis = graph.const("token_axis", np.array([1]))
        total = graph.node("ReduceSum", [graph.node("Mul", [x, weights], "masked"), axis],
                           "pooled_sum", keepdims=0)
        counts = graph.node("ReduceSum", [weights, axis], "pooled_count", keepdims=0)
        counts = graph.node("Max", [counts, graph.scalar("count_floor", 1e-9)], "pooled_floor")
        graph.node("Div", [total, counts], OUTPUT)

    model = helper.make_model(
        helper.make_graph(
            graph.nodes,
            "bert_sentence_encoder",
            [helper.make_tensor_value_info(name, TensorProto.INT64, ["batch", "tokens"])
             for name in INPUTS],
            [helper.make_tensor_value_info(OUTPUT, TensorProto.FLOAT, ["batch", width])],
            graph.initializers,
        ),
        opset_imports=[helper.make_opsetid("", OPSET)],
    )
    model.ir_version = 8  # what every onnxruntime since 1.10 reads
    return model.SerializeToString()


def _encoder_layer(
    graph: _Graph, x: str, bias: str, p: str, heads: int, width: int, eps: float
) -> str:
    """One BERT layer: self-attention, then the feed-forward block, each with its residual
    and LayerNorm (post-norm, as BERT)."""
    size = width // heads
    heads_shape = graph.const(p + "heads_shape", np.array([0, 0, heads, size]))

    def split_heads(name: str, perm: list[int], scale: float = 1.0) -> str:
        projected = graph.linear(x, f"{p}attention.self.{name}.", scale)
        shaped = graph.node("Reshape", [projected, heads_shape], f"{p}{name}/heads")
        return graph.node("Transpose", [shaped], f"{p}{name}/t", perm=perm)

    query = split_heads("query", [0, 2, 1, 3], 1 / math.sqrt(size))  # the scale, folded in
    key = split_heads("key", [0, 2, 3, 1])
    value = split_heads("value", [0, 2, 1, 3])
    scores = graph.node("Add", [graph.node("MatMul", [query, key], f"{p}scores/raw"), bias],
                        f"{p}scores")
    probs = graph.node("Softmax", [scores], f"{p}probs", axis=-1)
    context = graph.node("MatMul", [probs, value], f"{p}context/heads")
    context = graph.node("Transpose", [context], f"{p}context/t", perm=[0, 2, 1, 3])
    context = graph.node("Reshape", [context, graph.const(p + "width_shape",
                                                          np.array([0, 0, width]))],
                         f"{p}context")
    attended = graph.linear(context, p + "attention.output.dense.")
    x = graph.norm(graph.node("Add", [x, attended], f"{p}residual1"),
                   p + "attention.output.LayerNorm.", eps)
    hidden = graph.linear(x, p + "intermediate.dense.")
    # GELU, erf form: x * (1 + erf(x / sqrt 2)) / 2.
    erf = graph.node("Erf", [graph.node("Mul", [hidden, graph.scalar(p + "root_half",
                                                                      1 / math.sqrt(2))],
                                        f"{p}gelu/scaled")], f"{p}gelu/erf")
    plus = graph.node("Add", [erf, graph.scalar(p + "one", 1.0)], f"{p}gelu/plus")
    gelu = graph.node("Mul", [graph.node("Mul", [hidden, plus], f"{p}gelu/times"),
                              graph.scalar(p + "half", 0.5)], f"{p}gelu")
    out = graph.linear(gelu, p + "output.dense.")
    return graph.norm(graph.node("Add", [x, out], f"{p}residual2"), p + "output.LayerNorm.", eps)


class _Graph:
    """Nodes and initializers being collected; each node's output is named after it."""

    def __init__(self, tensors: dict[str, np.ndarray]) -> None:
        self.tensors = tensors
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []

    def const(self, name: str, value: np.ndarray) -> str:
        from onnx import numpy_helper

        self.initializers.append(numpy_helper.from_array(np.ascontiguousarray(value), name))
        return name

    def scalar(self, name: str, value: float) -> str:
        return self.const(name, np.array(value, dtype=np.float32))

    def weight(self, name: str, transform: Any = None) -> str:
        value = self.tensors[name].astype(np.float32)
        return self.const(name, value if transform is None else transform(value))

    def node(self, op: str, inputs: list[str], output: str, **attributes: Any) -> str:
        from onnx import helper

        self.nodes.append(helper.make_node(op, inputs, [output], name=output, **attributes))
        return output

    def linear(self, x: str, prefix: str, scale: float = 1.0) -> str:
        """x @ W.T + b of a torch Linear (it stores W as (out, in); MatMul wants (in, out)).
        `scale` multiplies the result, folded into the weights where it costs nothing."""
        factor = np.float32(scale)
        w = self.weight(prefix + "weight", lambda value: np.ascontiguousarray(value.T * factor))
        b = self.weight(prefix + "bias", lambda value: value * factor)
        return self.node("Add", [self.node("MatMul", [x, w], prefix + "matmul"), b], prefix + "out")

    def norm(self, x: str, prefix: str, eps: float) -> str:
        return self.node("LayerNormalization",
                         [x, self.weight(prefix + "weight"), self.weight(prefix + "bias")],
                         prefix + "out", axis=-1, epsilon=eps)
