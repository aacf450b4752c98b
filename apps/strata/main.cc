// strata: the command-line front end. `strata generate` runs one prompt through
// a model; further commands (serve, bench) arrive with their issues.
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

#include "commands.h"

namespace {

void print_usage() {
  std::fprintf(stderr,
               "usage: strata COMMAND [flags]\n\n"
               "commands:\n"
               "  generate   generate a continuation of one prompt (--help for flags)\n"
               "  serve      OpenAI/vLLM-compatible HTTP server (--help for flags)\n"
               "  bench      benchmarks: `strata bench throughput` (offline engine),\n"
               "             `strata bench serve` (any OpenAI-compatible server),\n"
               "             `strata bench plot` (plots of sweeps)\n"
               "  version    print the version and build (also --version)\n");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 2 || std::strcmp(argv[1], "--help") == 0 || std::strcmp(argv[1], "-h") == 0) {
    print_usage();
    return argc < 2 ? 2 : 0;
  }
  std::string command = argv[1];
  std::vector<std::string> args(argv + 2, argv + argc);
  if (command == "generate") return strata::app::run_generate(args);
  if (command == "serve") return strata::app::run_serve(args);
  if (command == "bench") return strata::app::run_bench(args);
  if (command == "version" || command == "--version") {
    std::printf("%s\n", strata::app::version_line().c_str());
    return 0;
  }
  std::fprintf(stderr, "strata: unknown command '%s'\n", command.c_str());
  print_usage();
  return 2;
}
