//! Apps as people name them: which source documents make up one product (Twilio's 53 documents
//! are one app, Microsoft Graph is split into Outlook, Teams, OneDrive, …), its slug, title,
//! aliases and categories, and which directory documents the vendors' own documents replace.
//!
//! Documents no entry claims are grouped by the rule in `lib.rs` (one app per provider, or per
//! service for the big multi-product providers).

/// One product app.
pub struct Product {
    /// Stable slug, also the prefix of its tool names.
    pub slug: &'static str,
    pub title: &'static str,
    /// Other names people use: abbreviations, older names, product lines.
    pub aliases: &'static [&'static str],
    /// Used when no source document has `x-apisguru-categories`.
    pub categories: &'static [&'static str],
    /// Document ids; an id ending in `/` takes every document under that prefix
    /// (`twilio/` = all Twilio vendor documents).
    pub documents: &'static [&'static str],
    /// When set, only operations whose first path segment — after `/me` or `/users/{id}` — is
    /// one of these (a document shared by several products, e.g. Microsoft Graph).
    pub segments: Option<&'static [&'static str]>,
}

const fn p(
    slug: &'static str,
    title: &'static str,
    aliases: &'static [&'static str],
    categories: &'static [&'static str],
    documents: &'static [&'static str],
) -> Product {
    Product {
        slug,
        title,
        aliases,
        categories,
        documents,
        segments: None,
    }
}

const GRAPH: &[&str] = &["microsoft.com/graph"];

pub const PRODUCTS: &[Product] = &[
    // Messaging and meetings.
    p(
        "slack",
        "Slack",
        &["slack api"],
        &["messaging", "collaboration"],
        &["slack.com", "slack.com/openai"],
    ),
    p(
        "discord",
        "Discord",
        &["discord bot"],
        &["messaging", "social"],
        &["discord/discord-api"],
    ),
    p(
        "telegram",
        "Telegram",
        &["telegram bot"],
        &["messaging"],
        &["telegram.org"],
    ),
    p(
        "zoom",
        "Zoom",
        &["zoom meetings", "zoom video"],
        &["video", "collaboration"],
        &["zoom.us"],
    ),
    p(
        "twilio",
        "Twilio",
        &[
            "twilio sms",
            "twilio verify",
            "twilio voice",
            "twilio whatsapp",
        ],
        &["messaging", "telecom"],
        &["twilio/"],
    ),
    p(
        "vonage",
        "Vonage",
        &["nexmo", "vonage api", "vonage sms"],
        &["messaging", "telecom"],
        &["nexmo.com/"],
    ),
    p(
        "vonage_business",
        "Vonage Business Communications",
        &["vonage business", "vbc"],
        &["telecom"],
        &["vonage.com/"],
    ),
    p(
        "intercom",
        "Intercom",
        &[],
        &["support", "messaging"],
        &["intercom/intercom-api-2.16"],
    ),
    // Email.
    p(
        "gmail",
        "Gmail",
        &["google mail", "gmail api"],
        &["email"],
        &["googleapis.com/gmail"],
    ),
    p(
        "sendgrid",
        "SendGrid",
        &["twilio sendgrid", "send grid"],
        &["email", "marketing"],
        &["sendgrid/"],
    ),
    p(
        "mailgun",
        "Mailgun",
        &["mail gun", "sinch mailgun"],
        &["email"],
        &["mailgun/mailgun-api"],
    ),
    p(
        "postmark",
        "Postmark",
        &["postmark app", "postmarkapp"],
        &["email"],
        &["postmarkapp.com/"],
    ),
    p(
        "mailchimp",
        "Mailchimp",
        &["mail chimp", "mailchimp marketing", "intuit mailchimp"],
        &["email", "marketing"],
        &["mailchimp.com"],
    ),
    p(
        "mandrill",
        "Mandrill",
        &["mailchimp transactional", "mandrill app"],
        &["email"],
        &["mandrillapp.com"],
    ),
    // Microsoft 365 (one Graph document, split by what people connect).
    Product {
        slug: "outlook",
        title: "Outlook",
        aliases: &[
            "microsoft outlook",
            "outlook mail",
            "outlook calendar",
            "office 365 mail",
            "hotmail",
            "exchange online",
        ],
        categories: &["email", "calendar"],
        documents: GRAPH,
        segments: Some(&[
            "messages",
            "mailFolders",
            "microsoft.graph.sendMail",
            "events",
            "calendar",
            "calendars",
            "calendarView",
            "calendarGroups",
            "contacts",
            "contactFolders",
            "microsoft.graph.findMeetingTimes",
            "mailboxSettings",
            "inferenceClassification",
            "outlook",
            "microsoft.graph.getMailTips",
        ]),
    },
    Product {
        slug: "teams",
        title: "Microsoft Teams",
        aliases: &["ms teams", "msteams", "teams chat"],
        categories: &["messaging", "collaboration"],
        documents: GRAPH,
        segments: Some(&[
            "teams",
            "chats",
            "joinedTeams",
            "onlineMeetings",
            "teamwork",
            "presence",
            "appCatalogs",
            "teamsTemplates",
        ]),
    },
    Product {
        slug: "onedrive",
        title: "OneDrive",
        aliases: &["microsoft onedrive", "one drive", "onedrive for business"],
        categories: &["storage"],
        documents: GRAPH,
        segments: Some(&["drive", "drives", "shares"]),
    },
    Product {
        slug: "sharepoint",
        title: "SharePoint",
        aliases: &["microsoft sharepoint", "share point"],
        categories: &["collaboration", "storage"],
        documents: GRAPH,
        segments: Some(&["sites", "followedSites"]),
    },
    Product {
        slug: "microsoft_todo",
        title: "Microsoft To Do",
        aliases: &["ms todo", "microsoft to-do", "to do", "wunderlist"],
        categories: &["productivity"],
        documents: GRAPH,
        segments: Some(&["todo"]),
    },
    Product {
        slug: "onenote",
        title: "OneNote",
        aliases: &["microsoft onenote", "one note"],
        categories: &["productivity"],
        documents: GRAPH,
        segments: Some(&["onenote"]),
    },
    Product {
        slug: "planner",
        title: "Microsoft Planner",
        aliases: &["ms planner"],
        categories: &["project_management"],
        documents: GRAPH,
        segments: Some(&["planner"]),
    },
    p(
        "microsoft_graph",
        "Microsoft Graph",
        &[
            "microsoft 365",
            "office 365",
            "m365",
            "azure ad",
            "entra id",
            "microsoft entra",
        ],
        &["enterprise"],
        GRAPH,
    ),
    // Google Workspace and Google products.
    p(
        "google_sheets",
        "Google Sheets",
        &["gsheets", "google spreadsheet", "sheets"],
        &["productivity"],
        &["googleapis.com/sheets"],
    ),
    p(
        "google_calendar",
        "Google Calendar",
        &["gcal", "gcalendar"],
        &["calendar", "productivity"],
        &["googleapis.com/calendar"],
    ),
    p(
        "google_drive",
        "Google Drive",
        &["gdrive", "drive"],
        &["storage"],
        &["googleapis.com/drive"],
    ),
    p(
        "google_docs",
        "Google Docs",
        &["gdocs", "google documents"],
        &["productivity"],
        &["googleapis.com/docs"],
    ),
    p(
        "google_tasks",
        "Google Tasks",
        &["gtasks"],
        &["productivity"],
        &["googleapis.com/tasks"],
    ),
    p(
        "google_contacts",
        "Google Contacts",
        &["google people", "people api"],
        &["productivity"],
        &["googleapis.com/people"],
    ),
    p(
        "youtube",
        "YouTube",
        &["yt", "youtube data", "you tube"],
        &["media", "video"],
        &[
            "googleapis.com/youtube",
            "googleapis.com/youtubeAnalytics",
            "googleapis.com/youtubereporting",
        ],
    ),
    p(
        "google_translate",
        "Google Translate",
        &["google translation", "cloud translation"],
        &["text", "machine_learning"],
        &["googleapis.com/translate"],
    ),
    p(
        "google_maps",
        "Google Maps",
        &[
            "gmaps",
            "google maps platform",
            "google places",
            "google directions",
            "google geocoding",
        ],
        &["location"],
        &["google-maps/google-maps-platform"],
    ),
    p(
        "google_cloud_storage",
        "Google Cloud Storage",
        &["gcs", "gcp storage"],
        &["storage", "cloud"],
        &["googleapis.com/storage"],
    ),
    p(
        "firebase_cloud_messaging",
        "Firebase Cloud Messaging",
        &["fcm", "firebase messaging", "firebase push"],
        &["messaging", "developer_tools"],
        &["googleapis.com/fcm", "googleapis.com/fcmdata"],
    ),
    // Work tracking and documents.
    p(
        "notion",
        "Notion",
        &["notion so", "notion api"],
        &["productivity", "collaboration"],
        &["notion/notion-api"],
    ),
    p(
        "asana",
        "Asana",
        &[],
        &["project_management"],
        &["asana/asana-api"],
    ),
    p(
        "trello",
        "Trello",
        &[],
        &["project_management"],
        &["trello.com"],
    ),
    p(
        "jira",
        "Jira",
        &["atlassian jira", "jira cloud", "jira software"],
        &["project_management", "developer_tools"],
        &["atlassian.com/jira"],
    ),
    p(
        "box",
        "Box",
        &["box com", "box drive", "box sign"],
        &["storage", "collaboration"],
        &["box/box-platform"],
    ),
    p(
        "figma",
        "Figma",
        &[],
        &["design"],
        &["figma/figma-rest-api"],
    ),
    p(
        "webflow",
        "Webflow",
        &["webflow cms"],
        &["cms", "hosting"],
        &["webflow/webflow-data-api-v2"],
    ),
    p(
        "docusign",
        "DocuSign",
        &["docu sign", "esignature"],
        &["productivity"],
        &["docusign.net"],
    ),
    // Code and operations.
    p(
        "github",
        "GitHub",
        &["gh", "git hub", "github rest"],
        &["developer_tools"],
        &["github.com/api.github.com"],
    ),
    p(
        "gitlab",
        "GitLab",
        &["git lab"],
        &["developer_tools"],
        &["gitlab.com"],
    ),
    p(
        "bitbucket",
        "Bitbucket",
        &["atlassian bitbucket", "bit bucket"],
        &["developer_tools"],
        &["bitbucket.org"],
    ),
    p(
        "sentry",
        "Sentry",
        &["sentry io"],
        &["monitoring", "developer_tools"],
        &["sentry/sentry-api"],
    ),
    p(
        "datadog",
        "Datadog",
        &["data dog", "dd"],
        &["monitoring"],
        &["datadog/"],
    ),
    p(
        "cloudflare",
        "Cloudflare",
        &["cloud flare", "cf"],
        &["hosting", "security"],
        &["cloudflare/cloudflare-api-v4"],
    ),
    p(
        "okta",
        "Okta",
        &["okta identity"],
        &["security", "enterprise"],
        &["okta/okta-management"],
    ),
    p(
        "vercel",
        "Vercel",
        &["zeit"],
        &["hosting", "developer_tools"],
        &["vercel.com"],
    ),
    p(
        "netlify",
        "Netlify",
        &[],
        &["hosting", "developer_tools"],
        &["netlify.com"],
    ),
    p(
        "digitalocean",
        "DigitalOcean",
        &["digital ocean"],
        &["cloud", "hosting"],
        &["digitalocean.com"],
    ),
    p(
        "circleci",
        "CircleCI",
        &["circle ci"],
        &["developer_tools"],
        &["circleci.com"],
    ),
    p(
        "launchdarkly",
        "LaunchDarkly",
        &["launch darkly", "feature flags"],
        &["developer_tools"],
        &["launchdarkly.com"],
    ),
    // AWS products people name on their own.
    p(
        "aws_s3",
        "Amazon S3",
        &["s3", "aws s3", "simple storage service"],
        &["storage", "cloud"],
        &["amazonaws.com/s3"],
    ),
    p(
        "aws_lambda",
        "AWS Lambda",
        &["amazon lambda", "lambda functions"],
        &["cloud"],
        &["amazonaws.com/lambda"],
    ),
    p(
        "aws_ses",
        "Amazon SES",
        &["ses", "aws ses", "simple email service"],
        &["email", "cloud"],
        &["amazonaws.com/sesv2", "amazonaws.com/email"],
    ),
    p(
        "aws_sqs",
        "Amazon SQS",
        &["sqs", "aws sqs", "simple queue service"],
        &["cloud"],
        &["amazonaws.com/sqs"],
    ),
    p(
        "aws_sns",
        "Amazon SNS",
        &["sns", "aws sns", "simple notification service"],
        &["messaging", "cloud"],
        &["amazonaws.com/sns"],
    ),
    p(
        "aws_ec2",
        "Amazon EC2",
        &["ec2", "aws ec2", "elastic compute cloud"],
        &["cloud"],
        &["amazonaws.com/ec2"],
    ),
    p(
        "aws_dynamodb",
        "Amazon DynamoDB",
        &["dynamodb", "dynamo db", "aws dynamodb"],
        &["cloud"],
        &["amazonaws.com/dynamodb"],
    ),
    // Money.
    p(
        "stripe",
        "Stripe",
        &["stripe payments", "stripe billing"],
        &["payment", "financial"],
        &["stripe.com"],
    ),
    p(
        "paypal",
        "PayPal",
        &[
            "pay pal",
            "paypal checkout",
            "paypal invoicing",
            "paypal payouts",
            "braintree",
        ],
        &["payment", "financial"],
        &["paypal/"],
    ),
    p(
        "square",
        "Square",
        &["squareup", "square pos"],
        &["payment", "ecommerce"],
        &["squareup.com"],
    ),
    p(
        "xero",
        "Xero",
        &["xero accounting"],
        &["financial"],
        &["xero.com/"],
    ),
    p("plaid", "Plaid", &[], &["financial"], &["plaid.com"]),
    p(
        "ynab",
        "YNAB",
        &["you need a budget", "youneedabudget"],
        &["financial"],
        &["youneedabudget.com"],
    ),
    p(
        "shipstation",
        "ShipStation",
        &["ship station"],
        &["ecommerce"],
        &["shipstation/shipstation-api-v2"],
    ),
    p(
        "ebay",
        "eBay",
        &["e bay"],
        &["ecommerce"],
        &["ebay.com/", "apiz.ebay.com/"],
    ),
    // Marketing, CRM, support.
    p(
        "hubspot",
        "HubSpot",
        &["hub spot", "hubapi"],
        &["marketing", "customer_relation"],
        &["hubapi.com/"],
    ),
    // AI.
    p(
        "openai",
        "OpenAI",
        &[
            "open ai",
            "chatgpt",
            "chat gpt",
            "gpt",
            "gpt 4",
            "gpt 4o",
            "dall e",
            "dalle",
            "whisper",
            "sora",
            "openai api",
        ],
        &["machine_learning"],
        &["openai/openai-api"],
    ),
    p(
        "pinecone",
        "Pinecone",
        &["pinecone vector database"],
        &["machine_learning"],
        &["pinecone.io"],
    ),
    // Media and the rest.
    p(
        "spotify",
        "Spotify",
        &["spotify web api"],
        &["media", "entertainment"],
        &["spotify.com", "spotify.com/sonallux"],
    ),
    p(
        "twitter",
        "X (Twitter)",
        &["x", "x twitter", "twitter x", "tweet"],
        &["social"],
        &["twitter.com/"],
    ),
    p("vimeo", "Vimeo", &[], &["video", "media"], &["vimeo.com"]),
    p("giphy", "GIPHY", &["gif"], &["media"], &["giphy.com"]),
    p(
        "ticketmaster",
        "Ticketmaster",
        &["ticket master"],
        &["entertainment", "ecommerce"],
        &["ticketmaster.com/"],
    ),
    p("mux", "Mux", &["mux video"], &["video"], &["mux.com"]),
    p(
        "api_video",
        "api.video",
        &["apivideo", "api video"],
        &["video"],
        &["api.video"],
    ),
    p(
        "nytimes",
        "The New York Times",
        &["new york times", "nyt", "ny times"],
        &["media", "open_data"],
        &["nytimes.com/"],
    ),
    p(
        "stackexchange",
        "Stack Exchange",
        &["stack overflow", "stackoverflow"],
        &["developer_tools", "social"],
        &["stackexchange.com"],
    ),
    p(
        "wikimedia",
        "Wikimedia",
        &["wikipedia", "wiki media"],
        &["open_data", "media"],
        &["wikimedia.org"],
    ),
    p(
        "tfl",
        "Transport for London",
        &["tfl", "london transport", "tube"],
        &["transport"],
        &["tfl.gov.uk"],
    ),
];

/// The 50 most-requested services that the catalog has (see `eval/README.md`): the strongest
/// prior in app search.
pub const TOP: &[&str] = &[
    "gmail",
    "google_calendar",
    "google_sheets",
    "google_drive",
    "google_docs",
    "slack",
    "teams",
    "outlook",
    "onedrive",
    "notion",
    "github",
    "gitlab",
    "jira",
    "trello",
    "asana",
    "hubspot",
    "intercom",
    "stripe",
    "paypal",
    "xero",
    "zoom",
    "discord",
    "twilio",
    "sendgrid",
    "mailchimp",
    "box",
    "figma",
    "youtube",
    "twitter",
    "openai",
    "sentry",
    "datadog",
    "cloudflare",
    "aws_s3",
];

/// Directory documents a vendor's own document replaces (older, Postman-derived, or under a
/// wrong name), and directory documents that are placeholders for another product.
pub const SUPERSEDED: &[(&str, &str)] = &[
    ("asana.com", "asana/asana-api"),
    ("box.com", "box/box-platform"),
    ("notion.com", "notion/notion-api"),
    ("okta.local", "okta/okta-management"),
    ("openai.com", "openai/openai-api"),
    ("sendgrid.com", "sendgrid/"),
    ("shipstation.com", "shipstation/shipstation-api-v2"),
    ("twilio.com/", "twilio/"),
    // The same Spotify Web API, with its description errors fixed.
    ("spotify.com", "spotify.com/sonallux"),
    // The beta copy of Graph duplicates v1.0 (22,361 operations).
    ("microsoft.com/graph-beta", "microsoft.com/graph"),
];

/// Operations the first catalog had that the vendor's current document no longer has, with the
/// operation that took their place (tool name of the first catalog, document, operation).
pub const SUCCESSORS: &[(&str, &str, &str)] = &[
    // Notion's 2025 API queries data sources where it queried databases.
    (
        "notion.query_a_database",
        "notion/notion-api",
        "query-data-source",
    ),
    (
        "notion.update_a_database",
        "notion/notion-api",
        "update-a-data-source",
    ),
];

/// Directory documents dropped because they are not the product their name says.
pub const WRONG: &[(&str, &str)] = &[
    (
        "webflow.com",
        "Lucidtech's document-AI API published under webflow.com, not Webflow",
    ),
    (
        "clickup.com",
        "an apiary placeholder (2 operations on polls.apiblueprint.org), not ClickUp",
    ),
    (
        "salesforce.local/einstein",
        "Einstein Vision/Language on a placeholder host (salesforce.local), not the Salesforce API",
    ),
];

/// Providers whose documents are separate products even though they share a domain: a
/// marketplace or a government portal, not one vendor's API.
pub const PER_SERVICE: &[&str] = &[
    "apisetu.gov.in",
    "gov.bc.ca",
    "epa.gov",
    "rapidapi.com",
    "sheetlabs.com",
    "mastercard.com",
    "va.gov",
    "apache.org",
    "docker.com",
    "windows.net",
    "mercedes-benz.com",
    "openbanking.org.uk",
    "hsbc.com",
    "parliament.uk",
    "apigee.net",
    "apigee.local",
    "cloud-elements.com",
    "redhat.com",
    "nasa.gov",
    "nrel.gov",
    "opto22.com",
    "presalytics.io",
    "scideas.net",
    "surrey.ca",
    "api.gov.uk",
    "ndhm.gov.in",
    "seldon.local",
    "lufthansa.com",
    "here.com",
    "tomtom.com",
];

/// Whether `doc` is named by `pattern` (an id, or a prefix ending in `/`).
pub fn matches(pattern: &str, doc: &str) -> bool {
    match pattern.strip_suffix('/') {
        Some(prefix) => doc.starts_with(pattern) || doc == prefix,
        None => doc == pattern,
    }
}

/// The first static path segment that names what an operation acts on, skipping a leading
/// `/me` or `/users/{id}` (Graph's "this user" prefixes).
pub fn first_segment(path: &str) -> &str {
    let mut segs = path.split('/').filter(|s| !s.is_empty());
    let mut first = segs.next().unwrap_or("");
    if first == "me" {
        first = segs.next().unwrap_or("");
    } else if first == "users" {
        let second = segs.next().unwrap_or("");
        if second.starts_with('{') {
            first = segs.next().unwrap_or("");
        }
    }
    first
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn slugs_are_unique_lowercase_and_short() {
        let mut seen = std::collections::HashSet::new();
        for p in PRODUCTS {
            assert!(seen.insert(p.slug), "duplicate slug {}", p.slug);
            assert!(
                p.slug
                    .chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '_'),
                "{}",
                p.slug
            );
            assert!(p.slug.len() <= 40, "{}", p.slug);
        }
    }

    #[test]
    fn graph_paths_split_by_their_first_segment() {
        assert_eq!(first_segment("/me/messages/{message-id}"), "messages");
        assert_eq!(first_segment("/users/{user-id}/drive/root"), "drive");
        assert_eq!(first_segment("/users"), "users");
        assert_eq!(first_segment("/teams/{team-id}/channels"), "teams");
        assert!(matches("twilio/", "twilio/twilio_api_v2010"));
        assert!(matches("twilio.com/", "twilio.com/api"));
        assert!(!matches("slack.com", "slack.com/openai"));
    }
}
