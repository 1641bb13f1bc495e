// The one CSV reader: RFC 4180 quoting, short rows and the errors that name the file and line.
#include <doctest/doctest.h>

#include "results/csv.hpp"

namespace rs = dbench::results;

TEST_CASE("results::csv: fields with quotes, commas and missing trailing values") {
  const rs::CsvTable table = rs::parse_csv("a,b,c\r\n1,\"x, \"\"y\"\"\",3\n4,5\n", "t.csv");
  REQUIRE(table.rows.size() == 2);
  CHECK(table.rows[0][1] == "x, \"y\"");
  CHECK(table.rows[1][2].empty());
  CHECK(table.column("c") == 2);
  CHECK(table.column("d") == -1);
  CHECK_THROWS_WITH_AS(rs::parse_csv("a\n1,2\n", "t.csv"), doctest::Contains("line 2"), rs::CsvError);
  CHECK_THROWS_WITH_AS(rs::parse_csv("", "e.csv"), doctest::Contains("e.csv is empty"), rs::CsvError);
  CHECK_THROWS_WITH_AS(rs::parse_csv("a\n\"x\n", "q.csv"), doctest::Contains("not closed"), rs::CsvError);
}
