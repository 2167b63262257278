"""MBPP+ as a subset: the MBPP stages on EvalPlus's inputs, with outputs from the sandboxed reference."""

from plbench.subsets.mbpp import SOURCE_DATASETS, SUMMARY, MbppSubset

SUBSET = MbppSubset("mbpp_plus", SOURCE_DATASETS["mbpp_plus"], "Apache-2.0", SUMMARY)
