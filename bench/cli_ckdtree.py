#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# What a numpy user writes today to count the pairs of a file of 2D points within r:
#   cli_ckdtree.py POINTS.f64 R   prints the count (bench/bench_cli.py times the whole process)
import sys

import numpy as np
from scipy.spatial import cKDTree

p = np.fromfile(sys.argv[1], dtype=np.float64).reshape(-1, 2)
print(len(cKDTree(p).query_pairs(float(sys.argv[2]), output_type="ndarray")))
