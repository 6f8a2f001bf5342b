class ApplicationRecord < ActiveRecord::Base
  primary_abstract_class

  # Amounts are stored as integer cents everywhere; see lib/money_format.rb for display.
  def self.money_columns(*names)
    names.each do |name|
      validates name, numericality: { only_integer: true }, allow_nil: true
    end
  end
end
