"""Writes symbolic.onnx, the model describe_test.go and
cmd/beamml-inspect's test describe: named and unnamed symbolic dimensions,
a scalar input with a default, an output of undeclared rank, an If whose
branches hold nodes, and an operator of a domain no backend implements.

Run with Debian's python3-onnx: /usr/bin/python3 symbolic.py
"""
import onnx
from onnx import TensorProto, helper

scaled = helper.make_tensor_value_info("scaled", TensorProto.FLOAT, ["batch", "sequence"])
then_branch = helper.make_graph(
    [helper.make_node("Identity", ["scaled"], ["t"], name="keep")],
    "then", [], [helper.make_tensor_value_info("t", TensorProto.FLOAT, None)])
else_branch = helper.make_graph(
    [helper.make_node("Neg", ["scaled"], ["e"], name="negate")],
    "else", [], [helper.make_tensor_value_info("e", TensorProto.FLOAT, None)])

graph = helper.make_graph(
    [
        helper.make_node("Cast", ["input_ids"], ["ids_f"], name="cast", to=TensorProto.FLOAT),
        helper.make_node("Mul", ["ids_f", "scale"], ["scaled"], name="scale"),
        helper.make_node("Custom", ["scaled"], ["out"], name="custom", domain="com.example"),
        helper.make_node("If", ["flag"], ["branch"], name="choose",
                         then_branch=then_branch, else_branch=else_branch),
    ],
    "symbolic",
    [
        helper.make_tensor_value_info("input_ids", TensorProto.INT64, ["batch", "sequence"]),
        helper.make_tensor_value_info("flag", TensorProto.BOOL, []),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT64, ["batch", None]),
        helper.make_tensor_value_info("scale", TensorProto.FLOAT, []),
    ],
    [
        helper.make_tensor_value_info("out", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("branch", TensorProto.FLOAT, ["batch", 4]),
    ],
    initializer=[helper.make_tensor("scale", TensorProto.FLOAT, [], [0.5])],
)
model = helper.make_model(graph, producer_name="symbolic.py", ir_version=8, opset_imports=[
    helper.make_opsetid("", 17), helper.make_opsetid("com.example", 1)])
onnx.save(model, "symbolic.onnx")
