#!/bin/sh
# SPDX-License-Identifier: MIT
# The one way nearby's tests (and the CLI's MPI tests) start MPI programs here:
#   tests/mpi/mpirun.sh NP PROGRAM [ARGS...]
# runs PROGRAM on NP ranks of one machine with Open MPI's mpirun (or $NB_MPIEXEC), allowing
# more ranks than cores (--oversubscribe, no core binding) and, as root, the
# allow-run-as-root setting Open MPI otherwise refuses. Shared-memory and self transports only
# (no network probing), and no single-copy mechanism, which containers often forbid. Every
# setting is an environment variable the caller may already have set; the caller's wins.
# Exit status: the program's (mpirun's), or 77 (ctest's "skipped") when no mpirun is found.
set -eu
np=${1:?usage: mpirun.sh NP PROGRAM [ARGS...]}
shift
exe=${NB_MPIEXEC:-mpirun}
if ! command -v "$exe" > /dev/null 2>&1; then
    echo "mpirun.sh: $exe not found: skipped" >&2
    exit 77
fi
if [ "$(id -u)" -eq 0 ]; then
    export OMPI_ALLOW_RUN_AS_ROOT="${OMPI_ALLOW_RUN_AS_ROOT:-1}"
    export OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="${OMPI_ALLOW_RUN_AS_ROOT_CONFIRM:-1}"
fi
export OMPI_MCA_btl="${OMPI_MCA_btl:-self,vader}"
# ob1, the point-to-point layer over those transports: without it MPI_Init first tries UCX's,
# which takes 0.2 s of each start (a rank count's whole run is about 0.2 s with it).
export OMPI_MCA_pml="${OMPI_MCA_pml:-ob1}"
export OMPI_MCA_btl_vader_single_copy_mechanism="${OMPI_MCA_btl_vader_single_copy_mechanism:-none}"
export OMPI_MCA_rmaps_base_oversubscribe="${OMPI_MCA_rmaps_base_oversubscribe:-1}"
export OMPI_MCA_hwloc_base_binding_policy="${OMPI_MCA_hwloc_base_binding_policy:-none}"
# Idle ranks yield their core: with more ranks than cores, a busy-waiting rank would starve
# the one it waits for.
export OMPI_MCA_mpi_yield_when_idle="${OMPI_MCA_mpi_yield_when_idle:-1}"
exec "$exe" --oversubscribe -np "$np" "$@"
