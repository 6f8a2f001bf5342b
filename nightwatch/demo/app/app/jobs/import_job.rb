# Imports a catalogue CSV uploaded by a merchandiser (admin "Import products").
# The file is an Active Storage blob; the result is emailed to the uploader.
class ImportJob
  include Sidekiq::Job
  sidekiq_options queue: :default, retry: 1

  def perform(signed_blob_id, user_id, currency = "USD")
    blob = ActiveStorage::Blob.find_signed!(signed_blob_id)
    user = User.find(user_id)

    result = blob.open { |file| CsvImporter.new(file, currency: currency).call }

    Sidekiq.logger.info("catalogue import #{blob.filename}: #{result.summary}")
    OrderMailer.with(user: user, filename: blob.filename.to_s, result: result).import_finished.deliver_now
  ensure
    # Uploads are kept for a week for support questions, then purged by Active Storage.
    blob&.update_columns(metadata: blob.metadata.merge("imported_at" => Time.current.iso8601)) if blob&.persisted?
  end
end
