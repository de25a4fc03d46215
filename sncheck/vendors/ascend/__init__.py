"""Huawei Ascend (CloudMatrix384, Atlas A2/A3): npu-smi, hccn_tool, hccl_test, asys, ascend-dmi."""
