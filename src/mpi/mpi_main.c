/* mpi_main.c - the moescope-mpi binary: `mpirun -np P moescope-mpi landscape ...`
 * or `... study ...`, the plain binary's commands with every landscape split over
 * the P processes (landscape_mpi.c). Rank 0 alone prints and writes the reports;
 * the others' standard output is discarded, their errors name their rank. A
 * process that fails stops the whole job (MPI_Abort), so no rank waits forever
 * in an exchange and no report is written from part of the orders. */
#include <mpi.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/cli.h"
#include "mpi/landscape_mpi.h"
#include "io/provenance.h"

/* OpenMPI keeps memory until exit by design (its components, its progress
 * thread's event loop); under LeakSanitizer only allocations made outside
 * MPI_Init and MPI_Finalize are checked (the rest of OpenMPI's are suppressed
 * in tests/lib/lsan.supp), so our own leaks still fail the tests. */
#if defined(__has_feature)
#if __has_feature(address_sanitizer) // clang
#define MS_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(MS_ASAN)
#include <sanitizer/lsan_interface.h>
#define LSAN_OFF() __lsan_disable()
#define LSAN_ON() __lsan_enable()
#else
#define LSAN_OFF() ((void)0)
#define LSAN_ON() ((void)0)
#endif

static void usage(FILE *fp) {
    fprintf(fp,
            "moescope-mpi %s - moescope's landscape and study split over MPI processes\n\n"
            "usage: mpirun -np P moescope-mpi landscape A B --eval E [options]\n"
            "       mpirun -np P moescope-mpi study CKPT... --eval E [options]\n\n"
            "The options are moescope's (moescope landscape --help, moescope study --help).\n"
            "Each process computes a share of the pairs' weight matching and outputs\n"
            "(exchanged with MPI_Allgatherv) and of the expert orders (gathered on rank 0,\n"
            "which alone prints and writes the reports); on networks, a share of the\n"
            "(point, order) evaluations and of the two end points; threads (--threads)\n"
            "work inside each process.\n"
            "The reports equal the single-process ones; their provenance records\n"
            "\"ranks\": P. Rank 0 prints the progress, with the time left.\n",
            ms_version());
}

static int run(int argc, char **argv) {
    int rc = cli_front(&argc, argv, "moescope-mpi", usage);
    if (rc >= 0) return rc;
    if (!strcmp(argv[1], "landscape")) return cmd_landscape(argc - 1, argv + 1);
    if (!strcmp(argv[1], "study")) return cmd_study(argc - 1, argv + 1);
    return cli_usage_error("mpirun -np P moescope-mpi landscape|study ...",
                           "moescope-mpi runs landscape and study; '%s' is the plain moescope's",
                           argv[1]);
}

int main(int argc, char **argv) {
    signal(SIGXFSZ, SIG_IGN); // past a file-size limit, write(2) fails with EFBIG and we report it
    cli_blas_prefer_cpu(argv); // the plain moescope's BLAS kernels, so both give the same numbers
    cli_stdio_guard();
    int provided = 0, rank = 0, size = 1;
    LSAN_OFF();
    MPI_Init_thread(&argc, &argv, MPI_THREAD_FUNNELED, &provided);
    LSAN_ON();
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_Comm_size(MPI_COMM_WORLD, &size);
    char name[64];
    snprintf(name, sizeof name, "moescope-mpi rank %d of %d", rank, size);
    ms_set_process_name(name); // every error message says which process
    if (provided < MPI_THREAD_FUNNELED) {
        fprintf(stderr, "%s: the MPI library gives no thread support (MPI_THREAD_FUNNELED)\n", name);
        MPI_Abort(MPI_COMM_WORLD, 1);
    }
    prov_set_command(argc, argv);
    prov_set_ranks(size);
    ls_partition part;
    landscape_mpi_init(&part, MPI_COMM_WORLD);
    cli_partition = &part;
    if (rank && !freopen("/dev/null", "w", stdout)) fclose(stdout); // rank 0 prints
    int rc = cli_stdout_done(run(argc, argv));
    if (rc) {
        fprintf(stderr, "%s: failed (exit status %d), stopping all %d ranks\n", name, rc, size);
        MPI_Abort(MPI_COMM_WORLD, rc);
    }
    landscape_mpi_free(&part);
    cli_partition = NULL;
    LSAN_OFF();
    MPI_Finalize();
    LSAN_ON();
    return 0;
}
