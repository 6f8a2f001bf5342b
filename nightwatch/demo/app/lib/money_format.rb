require "bigdecimal"

# Formatting and parsing of money amounts. Amounts are integer cents everywhere
# in the app; this is the one place that turns them into text and back.
#
#   MoneyFormat.format(129_900)          # => "$1,299.00"
#   MoneyFormat.format(-450, "EUR")      # => "-€4.50"
#   MoneyFormat.compact(1_200)           # => "$12"
#   MoneyFormat.parse("1.299,00", "EUR") # => 129_900
module MoneyFormat
  SYMBOLS = { "USD" => "$", "EUR" => "€", "GBP" => "£" }.freeze

  # Currencies written with a decimal comma in our CSV exports from suppliers.
  DECIMAL_COMMA = %w[EUR].freeze

  module_function

  def symbol_for(currency)
    SYMBOLS.fetch(currency) { "#{currency} " }
  end

  def format(cents, currency = "USD")
    whole, fraction = cents.abs.divmod(100)
    text = "#{symbol_for(currency)}#{delimit(whole)}.#{fraction.to_s.rjust(2, "0")}"
    cents.negative? ? "-#{text}" : text
  end

  # Short price label for product tiles: "$12" for whole amounts, "$12.99" otherwise.
  def compact(cents, currency = "USD")
    symbol = symbol_for(currency)
    return symbol + (cents / 100).to_s if (cents % 100).zero?

    symbol + (cents / 100.0).round(2)
  end

  # "1,299.00", "$1299", "1.299,00" (EUR) => cents. Raises ArgumentError on junk.
  def parse(text, currency = "USD")
    raw = text.to_s.strip.delete("^0-9.,-")
    raise ArgumentError, "not an amount: #{text.inspect}" if raw.empty?

    raw = DECIMAL_COMMA.include?(currency) ? raw.delete(".").tr(",", ".") : raw.delete(",")
    (BigDecimal(raw) * 100).round.to_i
  end

  def delimit(number)
    number.to_s.reverse.scan(/\d{1,3}/).join(",").reverse
  end
end
