#pragma once

#include <CLI/CLI.hpp>
#include <string>

namespace tocsin::cli {

// A CLI11 check for a number flag: a finite number (no nan, no inf) within [min, max], with a
// readable message that names the bounds ("must be a number from 0.001 to 86400, got \"nan\""),
// never CLI11's 300-digit range.
CLI::Validator Number(double min, double max);

// Seconds a wait may last: from 1 ms (a shorter one rounds to 0 and never waits) to a day.
CLI::Validator Seconds();

// A count or size: an integer from min to max.
CLI::Validator Count(long long min, long long max);

}  // namespace tocsin::cli
