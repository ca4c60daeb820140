/* landscape_mpi.h - the landscape split over the processes of an MPI
 * communicator: the ls_partition hooks of landscape.h on MPI collectives.
 * Only the moescope-mpi binary is built with it (the plain build needs no MPI). */
#ifndef MS_LANDSCAPE_MPI_H
#define MS_LANDSCAPE_MPI_H

#include <mpi.h>

#include "landscape/landscape.h"

/* Fill p for this process of comm (rank, size, hooks). MPI must be initialised with at
 * least MPI_THREAD_FUNNELED: the hooks run on the thread that calls landscape_compute,
 * never on its workers. Free with landscape_mpi_free. */
void landscape_mpi_init(ls_partition *p, MPI_Comm comm);
void landscape_mpi_free(ls_partition *p);

#endif
