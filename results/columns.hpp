// One column table per record type drives a CSV file both ways: the header and rows a writer emits, the typed
// reader (header checked, every cell through the one number parser) and the documented columns all come from
// it, so adding a column is one line of its table.
#pragma once

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "results/csv.hpp"
#include "results/number.hpp"

namespace dbench::results {

/// Where a cell lies, for the messages of a reader.
struct CellPlace {
  std::string_view source;  ///< the file
  std::size_t line = 0;     ///< 1-based, the header being line 1
  std::string_view column;
};

/// The number in `field` (nullopt when empty); throws CsvError naming the cell for anything that is not a
/// finite number.
std::optional<double> read_number_cell(std::string_view field, const CellPlace& place);

/// A whole number in `field`; throws CsvError naming the cell when it is empty or not a whole number.
std::int64_t read_count_cell(std::string_view field, const CellPlace& place);

/// One column of the CSV file of records R.
template <class R>
struct Column {
  std::string_view name;
  std::string_view doc;
  std::function<std::string(const R&)> write;  ///< the cell's text, quoted where CSV needs it
  std::function<void(R&, std::string_view, const CellPlace&)> read;  ///< from the unquoted field
  bool required = true;  ///< false: files written before the column existed lack it
};

/// A column repeated once per key of a group (a tensor): named prefix + key.
template <class R>
struct RepeatedColumn {
  std::string_view prefix;
  std::string_view doc;
  std::function<std::string(const R&, std::size_t key)> write;
  std::function<void(R&, std::size_t key, std::string_view, const CellPlace&)> read;
};

/// Columns after the fixed ones, repeated per key in key-major order (key 1's columns, then key 2's).
template <class R>
struct ColumnGroup {
  std::string_view key;                       ///< what a key is, for the documentation ("tensor")
  std::vector<RepeatedColumn<R>> columns;     ///< in their order within one key
  std::function<void(R&, std::size_t)> size;  ///< makes room for this many keys before a row is read
};

/// The column table of one CSV file of records R.
template <class R>
struct ColumnTable {
  std::vector<Column<R>> columns;
  std::optional<ColumnGroup<R>> group = std::nullopt;  ///< none: every column is fixed
};

/// A column of a table and what it holds, as the README documents it ("norm_mean:<tensor>" for a group's).
struct ColumnDoc {
  std::string name;
  std::string doc;
};

/// A CSV file read into records, with the group's keys in the header's order.
template <class R>
struct CsvRecords {
  std::vector<std::string> keys;
  std::vector<R> rows;
};

/// A text column, quoted with text_field as every text cell of a results file is.
template <class R>
Column<R> text_column(std::string_view name, std::string_view doc, std::string R::*member) {
  return {name, doc, [member](const R& r) { return text_field(r.*member); },
          [member](R& r, std::string_view field, const CellPlace&) { r.*member = read_text_field(field); }};
}

/// A number column; NaN is an empty cell both ways.
template <class R>
Column<R> number_column(std::string_view name, std::string_view doc, double R::*member,
                        bool required = true) {
  return {name, doc, [member](const R& r) { return format_number(r.*member); },
          [member](R& r, std::string_view field, const CellPlace& at) {
            r.*member = read_number_cell(field, at).value_or(kEmpty);
          },
          required};
}

/// A number column that may be absent from a row (an empty cell).
template <class R>
Column<R> optional_column(std::string_view name, std::string_view doc, std::optional<double> R::*member) {
  return {name, doc, [member](const R& r) { return r.*member ? format_number(*(r.*member)) : std::string(); },
          [member](R& r, std::string_view field, const CellPlace& at) {
            r.*member = read_number_cell(field, at);
          }};
}

/// The number in `field` where it may also be infinite or undefined ("inf", "-inf", "nan", as a relative
/// error against zero is); throws CsvError naming the cell for anything else.
double read_measure_cell(std::string_view field, const CellPlace& place);

/// A number column whose values may be infinite or undefined, written as "inf" and "nan".
template <class R>
Column<R> measure_column(std::string_view name, std::string_view doc, double R::*member) {
  return {name, doc, [member](const R& r) { return format_measure(r.*member); },
          [member](R& r, std::string_view field, const CellPlace& at) {
            r.*member = read_measure_cell(field, at);
          }};
}

/// A whole-number column (an iteration, a worker), never empty.
template <class R>
Column<R> count_column(std::string_view name, std::string_view doc, std::int64_t R::*member) {
  return {name, doc, [member](const R& r) { return std::to_string(r.*member); },
          [member](R& r, std::string_view field, const CellPlace& at) {
            r.*member = read_count_cell(field, at);
          }};
}

/// The header line of `table`, with the group's columns for `keys`.
template <class R>
std::string csv_header(const ColumnTable<R>& table, std::span<const std::string> keys = {}) {
  std::string out;
  for (const Column<R>& column : table.columns) {
    out += out.empty() ? "" : ",";
    out += text_field(column.name);
  }
  if (table.group) {
    for (const std::string& key : keys) {
      for (const RepeatedColumn<R>& column : table.group->columns) {
        out += ',';
        out += text_field(std::string(column.prefix) + key);
      }
    }
  }
  return out + '\n';
}

/// One row of `table` for `record`, whose group holds `keys` keys.
template <class R>
std::string csv_row(const ColumnTable<R>& table, const R& record, std::size_t keys = 0) {
  std::string out;
  bool first = true;
  for (const Column<R>& column : table.columns) {
    out += first ? "" : ",";
    first = false;
    out += column.write(record);
  }
  if (table.group) {
    for (std::size_t k = 0; k < keys; ++k) {
      for (const RepeatedColumn<R>& column : table.group->columns) {
        out += ',';
        out += column.write(record, k);
      }
    }
  }
  return out + '\n';
}

/// A whole file: the header and one row per record.
template <class R>
std::string write_csv(const ColumnTable<R>& table, std::span<const R> rows,
                      std::span<const std::string> keys = {}) {
  std::string out = csv_header(table, keys);
  for (const R& row : rows) {
    out += csv_row(table, row, keys.size());
  }
  return out;
}

/// The columns of `table` and what they hold.
template <class R>
std::vector<ColumnDoc> documented_columns(const ColumnTable<R>& table) {
  std::vector<ColumnDoc> docs;
  for (const Column<R>& column : table.columns) {
    docs.push_back({std::string(column.name), std::string(column.doc)});
  }
  if (table.group) {
    for (const RepeatedColumn<R>& column : table.group->columns) {
      docs.push_back(
          {std::string(column.prefix) + "<" + std::string(table.group->key) + ">", std::string(column.doc)});
    }
  }
  return docs;
}

namespace detail {

/// Where each column of `header` goes: the fixed column's index, or the group's (key, column) pair.
struct HeaderPlan {
  std::vector<int> fixed;  ///< per fixed column: its index in the header, or -1 when absent
  std::vector<std::string> keys;
  std::vector<std::vector<int>> grouped;  ///< per key, per repeated column: its index in the header
};

/// Checks `header` against the fixed names (required ones present, none twice) and the group's prefixes
/// (every key with all of them; `required` holds 1 per fixed column a file must have); throws CsvError naming
/// `source` and the column.
HeaderPlan plan_header(const std::vector<std::string>& header, std::span<const std::string_view> fixed,
                       std::span<const char> required, std::span<const std::string_view> prefixes,
                       bool grouped, std::string_view source);

}  // namespace detail

/// Reads CSV text written for `table`; `source` names the file in errors. Throws CsvError for a missing or
/// unknown column and for a cell its column cannot hold.
template <class R>
CsvRecords<R> read_csv(const ColumnTable<R>& table, std::string_view text, std::string_view source) {
  const CsvTable csv = parse_csv(text, source);
  std::vector<std::string_view> names;
  std::vector<char> required;
  for (const Column<R>& column : table.columns) {
    names.push_back(column.name);
    required.push_back(column.required ? 1 : 0);
  }
  std::vector<std::string_view> prefixes;
  if (table.group) {
    for (const RepeatedColumn<R>& column : table.group->columns) {
      prefixes.push_back(column.prefix);
    }
  }
  const detail::HeaderPlan plan =
      detail::plan_header(csv.header, names, required, prefixes, table.group.has_value(), source);
  CsvRecords<R> out;
  out.keys = plan.keys;
  for (std::size_t r = 0; r < csv.rows.size(); ++r) {
    const auto& cells = csv.rows[r];
    R record{};
    if (table.group) {
      table.group->size(record, plan.keys.size());
    }
    for (std::size_t c = 0; c < table.columns.size(); ++c) {
      if (plan.fixed[c] >= 0) {
        const auto at = static_cast<std::size_t>(plan.fixed[c]);
        table.columns[c].read(record, cells[at], CellPlace{source, r + 2, csv.header[at]});
      }
    }
    for (std::size_t k = 0; k < plan.grouped.size(); ++k) {
      for (std::size_t c = 0; c < plan.grouped[k].size(); ++c) {
        const auto at = static_cast<std::size_t>(plan.grouped[k][c]);
        table.group->columns[c].read(record, k, cells[at], CellPlace{source, r + 2, csv.header[at]});
      }
    }
    out.rows.push_back(std::move(record));
  }
  return out;
}

}  // namespace dbench::results
