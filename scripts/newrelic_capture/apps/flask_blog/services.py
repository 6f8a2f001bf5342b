"""The blog's calls to outside services: the newsletter's SMTP relay and the feeds of the blogs on its blogroll.

Neither failure is a crash: the newsletter is kept for the next send when the relay cannot be reached (logged as a
warning, with the exception), and a feed that comes back empty is logged as an error message (no exception).
"""

import logging
import os
import smtplib
from email.message import EmailMessage
from urllib.request import urlopen
from xml.etree import ElementTree

from flask import Blueprint, jsonify

services = Blueprint("services", __name__)
logger = logging.getLogger(__name__)

SMTP_RELAY = os.environ.get("BLOG_SMTP_HOST", "127.0.0.1"), int(os.environ.get("BLOG_SMTP_PORT", "25"))
FEEDS = os.environ.get("BLOG_FEEDS", "").split()  # the RSS feeds of the blogs on the blogroll
SUBSCRIBERS = ["reader@example.com", "editor@example.com"]
UNSENT: list[EmailMessage] = []  # newsletters the relay did not take, sent again by the next send


@services.route("/newsletter/send", methods=["POST"])
def send_newsletter():
    newsletter = EmailMessage()
    newsletter["Subject"], newsletter["From"] = "New on the blog: Hello", "blog@blog.example.com"
    newsletter["To"] = ", ".join(SUBSCRIBERS)
    newsletter.set_content("A new post: Hello (5 minutes).")
    UNSENT.append(newsletter)
    try:
        with smtplib.SMTP(*SMTP_RELAY, timeout=10) as relay:
            while UNSENT:
                relay.send_message(UNSENT[0])
                UNSENT.pop(0)
    except (OSError, smtplib.SMTPException):
        logger.warning("newsletter not sent, kept for the next send: %d unsent", len(UNSENT), exc_info=True)
        return jsonify(unsent=len(UNSENT)), 202
    return jsonify(sent=len(SUBSCRIBERS)), 200


@services.route("/blogroll/refresh", methods=["POST"])
def refresh_blogroll():
    titles = {}
    for url in FEEDS:
        with urlopen(url, timeout=10) as answer:
            entries = ElementTree.parse(answer).getroot().findall("./channel/item")
        if not entries:
            logger.error("feed %s returned no entries", url)
            continue
        titles[url] = [entry.findtext("title") for entry in entries]
    return jsonify(refreshed=len(titles), feeds=len(FEEDS))
