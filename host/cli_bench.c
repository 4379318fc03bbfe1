/* cli_bench.c: pawl bench (being written). */
#include <stdio.h>
int cli_bench_main(int argc, char **argv);
int cli_bench_main(int argc, char **argv) {
  (void)argc;
  (void)argv;
  fprintf(stderr, "pawl: bench is not built yet\n");
  return 1;
}
