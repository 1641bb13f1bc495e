// The column-table mechanism on a fixture record: one line of its table reaches the header, the rows, the
// reader and the documented columns; the one number parser refuses what is not a number.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "results/columns.hpp"
#include "results/number.hpp"

namespace rs = dbench::results;

namespace {

struct Fixture {
  std::int64_t step = 0;
  std::string name;
  double value = rs::kEmpty;
  double extra = rs::kEmpty;
  std::vector<double> per_key;
};

rs::ColumnTable<Fixture> fixture_table(bool with_extra) {
  using R = Fixture;
  rs::ColumnTable<R> table{{
      rs::count_column<R>("step", "the step", &R::step),
      rs::text_column<R>("name", "a name", &R::name),
      rs::number_column<R>("value", "a value", &R::value),
  }};
  if (with_extra) {
    table.columns.push_back(rs::number_column<R>("extra", "one more column", &R::extra));
  }
  return table;
}

rs::ColumnTable<Fixture> grouped_table() {
  using R = Fixture;
  rs::ColumnTable<R> table = fixture_table(false);
  table.group = rs::ColumnGroup<R>{
      "key",
      {{"v:", "a value per key", [](const R& r, std::size_t k) { return rs::format_number(r.per_key[k]); },
        [](R& r, std::size_t k, std::string_view field, const rs::CellPlace& at) {
          r.per_key[k] = rs::read_number_cell(field, at).value_or(rs::kEmpty);
        }}},
      [](R& r, std::size_t keys) { r.per_key.resize(keys, rs::kEmpty); },
  };
  return table;
}

bool documents(const std::vector<rs::ColumnDoc>& docs, std::string_view name) {
  return std::any_of(docs.begin(), docs.end(), [&](const rs::ColumnDoc& d) { return d.name == name; });
}

}  // namespace

TEST_CASE(
    "results::columns: one more column reaches the header, the rows, the reader and the documentation") {
  const std::vector<Fixture> rows = {{1, "ring", 0.5, 2.25, {}}, {2, "a,b", rs::kEmpty, 3.0, {}}};
  const std::string without = rs::write_csv(fixture_table(false), std::span<const Fixture>(rows));
  CHECK(without == "step,name,value\n1,ring,0.5\n2,\"a,b\",\n");
  const std::string with = rs::write_csv(fixture_table(true), std::span<const Fixture>(rows));
  CHECK(with == "step,name,value,extra\n1,ring,0.5,2.25\n2,\"a,b\",,3\n");
  const auto back = rs::read_csv(fixture_table(true), with, "f.csv").rows;
  REQUIRE(back.size() == 2);
  CHECK(back[0].extra == 2.25);
  CHECK(back[1].name == "a,b");
  CHECK(std::isnan(back[1].value));
  CHECK(documents(rs::documented_columns(fixture_table(true)), "extra"));
  CHECK_FALSE(documents(rs::documented_columns(fixture_table(false)), "extra"));
  // The table without the column refuses a file that has it, and the table with it a file that lacks it.
  CHECK_THROWS_WITH_AS(rs::read_csv(fixture_table(false), with, "f.csv"),
                       doctest::Contains("unknown column 'extra'"), rs::CsvError);
  CHECK_THROWS_WITH_AS(rs::read_csv(fixture_table(true), without, "f.csv"),
                       doctest::Contains("f.csv lacks the column 'extra'"), rs::CsvError);
}

TEST_CASE("results::columns: a group repeats its columns per key, read back in the header's order") {
  const std::vector<std::string> keys = {"fc1", "fc2"};
  const std::vector<Fixture> rows = {{0, "x", 1.0, rs::kEmpty, {0.25, 4.0}}};
  const std::string text = rs::write_csv(grouped_table(), std::span<const Fixture>(rows), keys);
  CHECK(text == "step,name,value,v:fc1,v:fc2\n0,x,1,0.25,4\n");
  const auto back = rs::read_csv(grouped_table(), text, "g.csv");
  CHECK(back.keys == keys);
  REQUIRE(back.rows.size() == 1);
  CHECK(back.rows[0].per_key == std::vector<double>{0.25, 4.0});
  CHECK(documents(rs::documented_columns(grouped_table()), "v:<key>"));
  CHECK_THROWS_WITH_AS(rs::read_csv(grouped_table(), "step,name,value,w:fc1\n", "g.csv"),
                       doctest::Contains("unknown column 'w:fc1'"), rs::CsvError);
}

TEST_CASE("results::columns: a cell its column cannot hold names the file, the line and the column") {
  CHECK_THROWS_WITH_AS(rs::read_csv(fixture_table(false), "step,name,value\n1,x,1.5x\n", "f.csv"),
                       doctest::Contains("f.csv: line 2: column 'value' holds '1.5x'"), rs::CsvError);
  CHECK_THROWS_WITH_AS(rs::read_csv(fixture_table(false), "step,name,value\n,x,1\n", "f.csv"),
                       doctest::Contains("column 'step' holds ''"), rs::CsvError);
  CHECK_THROWS_WITH_AS(rs::read_csv(fixture_table(false), "step,name,value\n1.5,x,1\n", "f.csv"),
                       doctest::Contains("not a whole number"), rs::CsvError);
  CHECK_THROWS_WITH_AS(rs::read_csv(fixture_table(false), "step,value,value\n", "f.csv"),
                       doctest::Contains("appears twice"), rs::CsvError);
}

TEST_CASE("results::number: the one parser takes a whole finite number and nothing else") {
  CHECK(rs::parse_number("7") == 7.0);
  CHECK(rs::parse_number("-2.5") == -2.5);
  CHECK(rs::parse_number("1e-3") == 1e-3);
  for (const char* bad : {"", "1.5x", " 1", "1 ", "nan", "NaN", "inf", "-inf", "0x10", "+1", "1,5", "."}) {
    CAPTURE(bad);
    CHECK_FALSE(rs::parse_number(bad).has_value());
  }
  CHECK(rs::format_number(0.1) == "0.1");
  CHECK(rs::format_number(1e21) == "1e+21");
  CHECK(rs::format_number(rs::kEmpty).empty());
  for (const double v : {0.1, 1.0 / 3.0, 6.02214076e23, -5e-324}) {
    CHECK(rs::parse_number(rs::format_number(v)) == v);
  }
}
