//! The app catalog as data, shared by the catalog builder (`lambdas/catalog`) and the platform:
//! the model and its artifact ([`model`]), reading OpenAPI documents ([`openapi`], [`html`],
//! [`naming`]), tool search ([`search`], text handling in [`text`]) and app search ([`apps`]).
//! Pure: no network, no AWS; the only I/O is reading the artifact file.

pub mod apps;
pub mod embed;
pub mod example;
pub mod html;
pub mod index;
pub mod method;
pub mod missing;
pub mod model;
pub mod naming;
pub mod openapi;
pub mod search;
pub mod text;

pub use model::{
    App, AuthKind, AuthScheme, Catalog, CatalogError, Doc, Method, OAuthFlow, SchemeUse, Server,
    ServerVariable, Source, Tool, ToolInput,
};
