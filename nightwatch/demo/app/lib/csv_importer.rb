require "csv"

# Imports a product catalogue CSV uploaded by the merchandising team.
#
# Columns: sku, name, category, price, stock, published. Suppliers send either
# comma- or semicolon-separated files; the separator is detected from the header.
# Rows are upserted by SKU; one bad row is reported and does not stop the import.
class CsvImporter
  Result = Struct.new(:created, :updated, :failed, keyword_init: true) do
    def summary
      "#{created} created, #{updated} updated, #{failed.size} failed"
    end
  end

  REQUIRED_COLUMNS = %w[sku name category price].freeze
  SEPARATORS = [",", ";"].freeze

  def initialize(io, currency: "USD")
    @io = io
    @currency = currency
  end

  def call
    result = Result.new(created: 0, updated: 0, failed: [])
    rows.each.with_index(2) do |row, line|
      import_row(row, result)
    rescue ActiveRecord::RecordInvalid, ArgumentError => e
      result.failed << { line: line, sku: row["sku"], error: e.message }
    end
    result
  end

  private

  def rows
    text = @io.read.force_encoding(Encoding::UTF_8)
    csv = CSV.parse(text, headers: true, col_sep: separator(text), skip_blanks: true, strip: true)
    missing = REQUIRED_COLUMNS - csv.headers.compact.map(&:downcase)
    raise ArgumentError, "missing columns: #{missing.join(", ")}" if missing.any?

    csv.map { |row| row.to_h.transform_keys { |key| key.to_s.downcase } }
  end

  def separator(text)
    header = text.lines.first.to_s
    SEPARATORS.max_by { |sep| header.count(sep) }
  end

  def import_row(row, result)
    product = Product.find_or_initialize_by(sku: row.fetch("sku"))
    result[product.new_record? ? :created : :updated] += 1
    product.update!(
      name: row.fetch("name"),
      slug: product.slug.presence || row.fetch("name").parameterize,
      category: category_for(row.fetch("category")),
      price_cents: MoneyFormat.parse(row.fetch("price"), @currency),
      stock: row["stock"].to_i,
      published: row["published"].to_s.strip.downcase.in?(%w[1 true yes])
    )
  end

  def category_for(name)
    @categories ||= {}
    @categories[name] ||= Category.find_or_create_by!(name: name) { |c| c.slug = name.parameterize }
  end
end
