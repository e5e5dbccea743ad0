// SPDX-License-Identifier: MIT
// The decomposition of nearby_mpi (filled in next).
#include "mpi_internal.h"
