//! The behaviour suite: every test talks HTTP to the real app, and runs on SQLite and on
//! PostgreSQL (when `TEST_DATABASE_URL` is set).

mod helpers;

mod access_cache;
mod aggregate;
mod audit;
mod auth;
mod batches;
mod bias;
mod careful;
mod cli;
mod conformance;
mod connections;
mod dashboard;
mod diff;
mod durability;
mod gold;
mod hardening;
mod input;
mod instances;
mod judge_agreement;
mod judge_endpoints;
mod judge_export;
mod judge_gold;
mod judge_model;
mod judge_pages;
mod judge_reading;
mod judge_server;
mod judge_stands;
mod judges;
mod lists;
mod metrics_live;
mod migrate_data;
mod migrations;
mod overlap;
mod pages;
mod qualification;
mod ranking;
mod rating;
mod reports;
mod review;
mod review_queue;
mod routes;
mod routing;
mod rubrics;
mod runner;
mod schema;
mod seed_rules;
mod settings_page;
mod states;

mod tokens;
mod upgrade;
mod users;
mod workday;
