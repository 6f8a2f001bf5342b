class OrderMailer < ApplicationMailer
  # params: order, lines (formatted invoice lines), totals (formatted amounts)
  def invoice
    @order = params.fetch(:order)
    @lines = params.fetch(:lines)
    @totals = params.fetch(:totals)
    mail(to: @order.contact_email, subject: t(".subject", number: @order.number, invoice: @order.invoice_number))
  end

  def confirmation
    @order = params.fetch(:order)
    @link = order_url(@order, token: @order.signed_id(purpose: :guest_access, expires_in: 90.days))
    mail(to: @order.contact_email, subject: t(".subject", number: @order.number))
  end

  # params: user, filename, result (CsvImporter::Result)
  def import_finished
    @result = params.fetch(:result)
    @filename = params.fetch(:filename)
    mail(to: params.fetch(:user).email, subject: t(".subject", filename: @filename))
  end
end
