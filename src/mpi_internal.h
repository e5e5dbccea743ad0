// SPDX-License-Identifier: MIT
// Private to nearby_mpi (src/mpi*.c). Never installed.
#ifndef NEARBY_MPI_INTERNAL_H
#define NEARBY_MPI_INTERNAL_H

#include <nearby/grid.h>
#include <nearby/mpi.h>

#endif
