// The rules of Go's encoding/csv Reader (defaults: LazyQuotes false, TrimLeadingSpace
// false), which Apptainer's --mount and pflag's --env go through.
#include "util/csv_fields.hpp"

#include <gtest/gtest.h>

namespace capsa {
namespace {

using Records = std::vector<CsvRecord>;

std::string error_of(std::string_view text, bool all = true) {
  try {
    if (all) read_csv_records(text);
    else read_csv_record(text);
  } catch (const FormatError& e) {
    return e.what();
  }
  return "accepted";
}

TEST(CsvFields, CommasSeparateFieldsAndSpacesAreKept) {
  EXPECT_EQ(read_csv_record("a,b,c"), (CsvRecord{"a", "b", "c"}));
  EXPECT_EQ(read_csv_record(" a , b"), (CsvRecord{" a ", " b"}));
  EXPECT_EQ(read_csv_record(","), (CsvRecord{"", ""}));
  EXPECT_EQ(read_csv_record("a,"), (CsvRecord{"a", ""}));
  EXPECT_EQ(read_csv_record("a\\,b"), (CsvRecord{"a\\", "b"})) << "a backslash escapes nothing";
}

TEST(CsvFields, QuotedFieldsHoldCommasNewlinesAndDoubledQuotes) {
  EXPECT_EQ(read_csv_record("\"a,b\",c"), (CsvRecord{"a,b", "c"}));
  EXPECT_EQ(read_csv_record("\"say \"\"hi\"\"\""), (CsvRecord{"say \"hi\""}));
  EXPECT_EQ(read_csv_record("\"\""), (CsvRecord{""}));
  EXPECT_EQ(read_csv_record("\"\",\"\""), (CsvRecord{"", ""}));
  EXPECT_EQ(read_csv_record("\" x \""), (CsvRecord{" x "}));
  EXPECT_EQ(read_csv_records("\"a\nb\",c\nd,e"), (Records{{"a\nb", "c"}, {"d", "e"}}));
  EXPECT_EQ(read_csv_record("\"a\n\nb\""), (CsvRecord{"a\n\nb"})) << "an empty line inside quotes is kept";
}

TEST(CsvFields, RecordsEndAtNewlinesAndEmptyLinesAreSkipped) {
  EXPECT_EQ(read_csv_records("a,b\nc,d\n"), (Records{{"a", "b"}, {"c", "d"}}));
  EXPECT_EQ(read_csv_records("\n\na\n\nb\n\n"), (Records{{"a"}, {"b"}}));
  EXPECT_EQ(read_csv_records(""), Records{});
  EXPECT_EQ(read_csv_record(""), std::nullopt);
  EXPECT_EQ(read_csv_record("\n\r\n"), std::nullopt);
}

TEST(CsvFields, CarriageReturnsBeforeNewlinesAreDropped) {
  EXPECT_EQ(read_csv_records("a,b\r\nc,d\r\ne,f"), (Records{{"a", "b"}, {"c", "d"}, {"e", "f"}}));
  EXPECT_EQ(read_csv_record("\"x\r\ny\""), (CsvRecord{"x\ny"}));
  EXPECT_EQ(read_csv_record("a\r"), (CsvRecord{"a"})) << "one that ends the text too";
  EXPECT_EQ(read_csv_record("a\rb"), (CsvRecord{"a\rb"})) << "others are kept";
}

TEST(CsvFields, OneRecordIsReadWithoutLookingFurther) {
  EXPECT_EQ(read_csv_record("a,b\nc"), (CsvRecord{"a", "b"}));
  EXPECT_EQ(read_csv_record("a\nb\"c"), (CsvRecord{"a"}));
  EXPECT_EQ(error_of("a\nb\"c"), "line 2, column 2: a double quote in an unquoted field (quote the whole field, and "
                                 "double each quote inside it)");
}

TEST(CsvFields, AQuoteInsideAnUnquotedFieldIsAnError) {
  EXPECT_EQ(error_of("ab\"c", false),
            "column 3: a double quote in an unquoted field (quote the whole field, and double each quote inside it)");
  EXPECT_NE(error_of("a, \"b\"").find("column 4: a double quote in an unquoted field"), std::string::npos)
      << "a space before the quote makes the field unquoted";
  EXPECT_NE(error_of("x=\"a,b\"").find("column 3:"), std::string::npos);
}

TEST(CsvFields, AClosingQuoteMustEndTheField) {
  EXPECT_EQ(error_of("\"a\"b"),
            "column 3: text after the closing double quote of a quoted field (a quote inside one is written \"\")");
  EXPECT_NE(error_of("\"a\" ,b").find("column 3: text after the closing double quote"), std::string::npos);
  EXPECT_NE(error_of("x\n\"a\"\"\" \n").find("line 2, column 5: text after"), std::string::npos);
}

TEST(CsvFields, AnUnclosedQuoteIsAnError) {
  EXPECT_EQ(error_of("\"abc"), "column 1: the double quote that opens this field is never closed");
  EXPECT_EQ(error_of("a,\"b\nc"), "line 1, column 3: the double quote that opens this field is never closed");
  EXPECT_EQ(error_of("\"a\r"), "column 1: the double quote that opens this field is never closed");
  EXPECT_EQ(error_of("\""), "column 1: the double quote that opens this field is never closed");
}

TEST(CsvFields, EveryRecordHasAsManyFieldsAsTheFirst) {
  EXPECT_EQ(error_of("a,b\nc"), "line 2 has 1 fields where the first has 2");
  EXPECT_EQ(error_of("\"x\ny\",b\nc,d,e"), "line 3 has 3 fields where the first has 2");
  EXPECT_EQ(read_csv_record("a,b\nc"), (CsvRecord{"a", "b"})) << "one record is not compared with others";
}

}  // namespace
}  // namespace capsa
