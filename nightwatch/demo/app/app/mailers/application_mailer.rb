class ApplicationMailer < ActionMailer::Base
  default from: "Storefront <orders@shop.example.com>", reply_to: "support@shop.example.com"
  layout "mailer"
end
