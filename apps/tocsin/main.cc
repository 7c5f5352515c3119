#include "cli/cli.h"

int main(int argc, char** argv) { return tocsin::cli::Main(argc, argv); }
